package org.ddp4j.internal;

/**
 * JNI declaration of the SGD update, native/src/core/ops_sgd.cpp's family
 * (native/src/jni/sgd_natives.cpp; Java side {@link org.ddp4j.optim.SGD}). Bad dtypes, shapes or
 * options throw IllegalArgumentException with the native message.
 */
public final class SgdNatives {
    static {
        NativeLibrary.load();
    }

    private SgdNatives() {}

    /**
     * One {@code torch.optim.SGD} update of param in place; momentumBuf may be 0 when momentum is 0;
     * {@code first} initialises the buffer to the gradient.
     */
    public static native void sgdStep(long param, long grad, long momentumBuf, double lr, double momentum,
            double dampening, double weightDecay, boolean nesterov, boolean first);
}
