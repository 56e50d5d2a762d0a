package org.ddp4j.internal;

import org.ddp4j.tensor.Tensor;

/**
 * A tensor's native handle, for ddp4j's JNI bindings only. {@link Tensor} keeps these methods
 * package-private and hands them to this class when it loads, so a user of the exported API never
 * sees a raw pointer; this package is not exported.
 */
public final class TensorHandles {
    private TensorHandles() {}

    /** What {@link Tensor} gives this class: its handle methods. */
    public interface Access {
        long nativeHandle(Tensor t);

        Tensor fromNativeHandle(long handle);

        Tensor fromNativeResult(long handle);

        Tensor fromNativeResult(long[] results, int slot);
    }

    private static volatile Access access;

    /**
     * Called once, by {@link Tensor}'s static initializer.
     *
     * @throws IllegalStateException when called a second time
     */
    public static void install(Access tensorAccess) {
        if (access != null) {
            throw new IllegalStateException("TensorHandles is installed already");
        }
        access = tensorAccess;
    }

    private static Access access() {
        Access a = access;
        if (a == null) {
            try { // a handle can be wrapped before any Tensor exists: load Tensor, which installs it
                Class.forName(Tensor.class.getName(), true, Tensor.class.getClassLoader());
            } catch (ClassNotFoundException e) {
                throw new IllegalStateException(e);
            }
            a = access;
        }
        return a;
    }

    /**
     * The handle of {@code t} (a pointer to its native tensor).
     *
     * @throws IllegalStateException if {@code t} is closed
     */
    public static long nativeHandle(Tensor t) {
        return access().nativeHandle(t);
    }

    /**
     * Wraps a handle returned by a ddp4j native call; the tensor owns it and joins the current scope.
     * Costs a second crossing for the metadata; prefer {@link #fromNativeResult(long)}.
     *
     * @throws IllegalArgumentException if {@code handle} is 0
     */
    public static Tensor fromNativeHandle(long handle) {
        return access().fromNativeHandle(handle);
    }

    /**
     * Wraps the single output of a native that has just filled slot 0 of this thread's
     * {@link NativeResults#buffer()}; the tensor owns it and joins the current scope.
     *
     * @throws IllegalArgumentException if {@code handle} is 0
     * @throws IllegalStateException if slot 0 does not hold {@code handle}
     */
    public static Tensor fromNativeResult(long handle) {
        return access().fromNativeResult(handle);
    }

    /** Wraps output {@code slot} of a native that has just filled {@code results}; null where its handle is 0. */
    public static Tensor fromNativeResult(long[] results, int slot) {
        return access().fromNativeResult(results, slot);
    }
}
