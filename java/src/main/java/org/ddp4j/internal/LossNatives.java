package org.ddp4j.internal;

/**
 * JNI declarations for the losses, as native/src/core/ops_loss.cpp groups them: MSE and
 * cross-entropy forward and backward (native/src/jni/loss_natives.cpp; Java side
 * {@link org.ddp4j.nn.functional.MSELossFunction} and {@link org.ddp4j.nn.functional.CrossEntropyFunction}).
 * Arguments and results are tensor handles; callers own every returned handle. Bad dtypes or
 * shapes throw IllegalArgumentException with a message naming the op and the shapes involved.
 */
public final class LossNatives {
    static {
        NativeLibrary.load();
    }

    private LossNatives() {}

    /** {@code torch.nn.functional.mse_loss} (mean): mean((input - target)²), shape []. */
    public static native long mseLossForward(long input, long target);

    /** Gradient of the MSE loss with respect to input, given the scalar output gradient gout. */
    public static native long mseLossBackward(long gout, long input, long target);

    /**
     * {@code torch.nn.functional.cross_entropy} (mean): returns {loss (shape []), probs [N, C]} for
     * float32 logits [N, C] and int64 targets [N].
     */
    public static native long[] crossEntropyForward(long logits, long target);

    /** Gradient with respect to the logits from the saved probabilities. */
    public static native long crossEntropyBackward(long gout, long probs, long target);
}
