package org.ddp4j.internal;

/**
 * JNI declarations for linear, ReLU, the losses and the SGD update
 * (native/src/jni/math_natives.cpp). Arguments and results are tensor handles (0 = absent
 * optional tensor); multi-output ops return {@code long[]} with 0 for outputs not computed.
 * Bad dtypes, shapes or values throw IllegalArgumentException with the native message, which
 * names the op and the shapes involved.
 */
public final class MathNatives {
    static {
        NativeLibrary.load();
    }

    private MathNatives() {}

    /** y[*, out] = x[*, in] · wᵀ + b; b may be 0 (no bias). */
    public static native long linearForward(long x, long w, long b);

    /** Returns {gx, gw, gb}; gx is 0 unless needGx, gb is 0 unless hasBias. */
    public static native long[] linearBackward(long gy, long x, long w, boolean needGx, boolean hasBias);

    /** max(x, 0). */
    public static native long reluForward(long x);

    /** gy where the forward output y is positive, else 0. */
    public static native long reluBackward(long gy, long y);

    /** mean((input - target)²), shape []. */
    public static native long mseLossForward(long input, long target);

    /** Gradient of the MSE loss with respect to input, given the scalar output gradient gout. */
    public static native long mseLossBackward(long gout, long input, long target);

    /** Returns {loss (shape []), probs [N, C]} for logits [N, C] and int64 targets [N]. */
    public static native long[] crossEntropyForward(long logits, long target);

    /** Gradient with respect to the logits from the saved probabilities. */
    public static native long crossEntropyBackward(long gout, long probs, long target);

    /**
     * One torch.optim.SGD update of param in place; momentumBuf may be 0 when momentum is 0;
     * {@code first} initialises the buffer to the gradient.
     */
    public static native void sgdStep(long param, long grad, long momentumBuf, double lr, double momentum,
            double dampening, double weightDecay, boolean nesterov, boolean first);
}
