package org.ddp4j.multiprocessing;

import java.lang.invoke.MethodHandleInfo;
import java.lang.invoke.SerializedLambda;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;

/**
 * The static method {@code static void name(int index, String[] args)} a spawned worker JVM calls,
 * named by class and method so that a new JVM can find it. Built from a {@link SpawnFunction}
 * (its {@link SerializedLambda} names the method behind a method reference or lambda) or from a
 * class and a method name; both are checked in the parent, before any JVM starts.
 */
record SpawnEntryPoint(String className, String methodName) {

    /** The JVM descriptor of the parameters every entry point must take: (int, String[]). */
    private static final String PARAMETERS = "(I[Ljava/lang/String;)";

    /**
     * The static method behind {@code fn}.
     *
     * @throws IllegalArgumentException if fn is not a method reference or lambda, refers to an
     *     instance method or constructor, captures values, or takes other parameters
     */
    static SpawnEntryPoint of(SpawnFunction fn) {
        if (fn == null) {
            throw new IllegalArgumentException("spawn needs a function: a static method reference such as MyTrainer::train");
        }
        SerializedLambda lambda = serializedForm(fn);
        String className = lambda.getImplClass().replace('/', '.');
        String method = lambda.getImplMethodName();
        String shown = method.startsWith("lambda$") ? "the lambda in " + className : className + "::" + method;
        int kind = lambda.getImplMethodKind();
        if (kind == MethodHandleInfo.REF_newInvokeSpecial) {
            throw new IllegalArgumentException("cannot spawn " + shown + ": it is a constructor reference; spawn calls a"
                    + " static method static void name(int index, String[] args)");
        }
        if (kind != MethodHandleInfo.REF_invokeStatic) {
            throw new IllegalArgumentException("cannot spawn " + shown + ": it is an instance method, and the object it"
                    + " belongs to cannot cross into a new JVM; make it static (static void " + method
                    + "(int index, String[] args)) and pass what the object held as string arguments");
        }
        if (lambda.getCapturedArgCount() > 0) {
            throw new IllegalArgumentException("cannot spawn " + shown + ": it captures " + lambda.getCapturedArgCount()
                    + " value(s) from where it was written, and captured values cannot cross into a new JVM; use a"
                    + " static method reference and pass the values as string arguments");
        }
        if (!lambda.getImplMethodSignature().startsWith(PARAMETERS)) {
            throw new IllegalArgumentException("cannot spawn " + shown + ": it takes " + lambda.getImplMethodSignature()
                    + "; spawn calls static void " + method + "(int index, String[] args)");
        }
        SpawnEntryPoint entry = new SpawnEntryPoint(className, method);
        entry.checkLoadable();
        return entry;
    }

    /**
     * The static method {@code methodName(int, String[])} of {@code type}.
     *
     * @throws IllegalArgumentException if there is no such method, it is not static, or the class
     *     is not on the class path a worker JVM gets
     */
    static SpawnEntryPoint of(Class<?> type, String methodName) {
        if (type == null || methodName == null || methodName.isBlank()) {
            throw new IllegalArgumentException("spawn needs a class and the name of its static method"
                    + " static void name(int index, String[] args)");
        }
        SpawnEntryPoint entry = new SpawnEntryPoint(type.getName(), methodName);
        entry.checkLoadable();
        Method m = entry.method(type);
        if (!Modifier.isStatic(m.getModifiers())) {
            throw new IllegalArgumentException("cannot spawn " + type.getName() + "." + methodName + "(int, String[]):"
                    + " it is not static, and a new JVM has no object to call it on; declare it static void "
                    + methodName + "(int index, String[] args)");
        }
        return entry;
    }

    /** Loads the class from the system class loader (the worker's) and finds the method, accessible. */
    Method resolve() throws ClassNotFoundException {
        Class<?> type = Class.forName(className, true, ClassLoader.getSystemClassLoader());
        Method m = method(type);
        if (!Modifier.isStatic(m.getModifiers())) {
            throw new IllegalArgumentException(className + "." + methodName + "(int, String[]) is not static");
        }
        m.setAccessible(true); // private lambda bodies and package-private trainers are fine
        return m;
    }

    private Method method(Class<?> type) {
        try {
            return type.getDeclaredMethod(methodName, int.class, String[].class);
        } catch (NoSuchMethodException e) {
            throw new IllegalArgumentException("cannot spawn " + className + "." + methodName + ": " + className
                    + " declares no method " + methodName + "(int, String[]); declare static void " + methodName
                    + "(int index, String[] args)");
        }
    }

    /** Fails unless a fresh JVM with this JVM's class path finds the class by name. */
    private void checkLoadable() {
        try {
            Class.forName(className, false, ClassLoader.getSystemClassLoader());
        } catch (ClassNotFoundException | LinkageError e) {
            throw new IllegalArgumentException("cannot spawn " + className + "." + methodName + ": the class is not on"
                    + " the class path worker JVMs get (java.class.path=" + System.getProperty("java.class.path")
                    + "); spawn runs classes a new JVM can load by name, not ones made at run time or loaded by"
                    + " another class loader");
        }
    }

    /** A method reference's or lambda's serialized form (the compiler adds writeReplace to serializable lambdas). */
    private static SerializedLambda serializedForm(SpawnFunction fn) {
        try {
            Method writeReplace = fn.getClass().getDeclaredMethod("writeReplace");
            writeReplace.setAccessible(true);
            Object form = writeReplace.invoke(fn);
            if (form instanceof SerializedLambda lambda) {
                return lambda;
            }
        } catch (ReflectiveOperationException | RuntimeException e) {
            // fall through: not a lambda
        }
        throw new IllegalArgumentException("cannot spawn an instance of " + fn.getClass().getName() + ": spawn needs a"
                + " static method reference such as MyTrainer::train (an object cannot cross into a new JVM), or use"
                + " Spawn.of(MyTrainer.class, \"train\")");
    }
}
