package org.ddp4j.launch;

import java.lang.reflect.Field;

/**
 * A worker whose JVM dies of a fatal error, for {@link FatalErrorLogTest}: it writes to address 0
 * through {@code sun.misc.Unsafe}, a SIGSEGV that HotSpot answers with its hs_err log and SIGABRT.
 */
public final class CrashingWorker {
    private CrashingWorker() {}

    public static void main(String[] args) throws Exception {
        Class<?> unsafeClass = Class.forName("sun.misc.Unsafe");
        Field theUnsafe = unsafeClass.getDeclaredField("theUnsafe");
        theUnsafe.setAccessible(true);
        Object unsafe = theUnsafe.get(null);
        // Reflection, so that javac has no internal API to warn about.
        unsafeClass.getMethod("putAddress", long.class, long.class).invoke(unsafe, 0L, 0L);
        System.err.println("CrashingWorker: the write to address 0 did not crash the JVM");
        System.exit(3);
    }
}
