package org.ddp4j.internal;

/**
 * JNI declarations for the losses, as native/src/core/ops_loss.cpp groups them: MSE and
 * cross-entropy forward and backward (native/src/jni/loss_natives.cpp; Java side
 * {@link org.ddp4j.nn.functional.MSELossFunction} and {@link org.ddp4j.nn.functional.CrossEntropyFunction}).
 * Arguments and results are tensor handles; callers own every returned handle. Bad dtypes or
 * shapes throw IllegalArgumentException with a message naming the op and the shapes involved.
 * Natives that create tensors take the thread's {@link NativeResults#buffer()} as {@code results}
 * and fill one slot per output with its handle and metadata (one crossing per op); single-output
 * ones also return the handle.
 */
public final class LossNatives {
    static {
        NativeLibrary.load();
    }

    private LossNatives() {}

    /** {@code torch.nn.functional.mse_loss} (mean): mean((input - target)²), shape []. */
    public static native long mseLossForward(long input, long target, long[] results);

    /** Gradient of the MSE loss with respect to input, given the scalar output gradient gout. */
    public static native long mseLossBackward(long gout, long input, long target, long[] results);

    /**
     * {@code torch.nn.functional.cross_entropy} (mean): fills results with {loss (shape []), probs [N, C]} for
     * float32 logits [N, C] and int64 targets [N].
     */
    public static native void crossEntropyForward(long logits, long target, long[] results);

    /** Gradient with respect to the logits from the saved probabilities. */
    public static native long crossEntropyBackward(long gout, long probs, long target, long[] results);
}
