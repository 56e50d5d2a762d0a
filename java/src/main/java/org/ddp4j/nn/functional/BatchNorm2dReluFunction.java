package org.ddp4j.nn.functional;

import java.util.Arrays;
import java.util.Objects;
import org.ddp4j.internal.NativeResults;
import org.ddp4j.internal.NormNatives;
import org.ddp4j.internal.TensorHandles;
import org.ddp4j.tensor.DType;
import org.ddp4j.tensor.Node;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;

/**
 * Batch normalisation fused with the ReLU after it, optionally with a residual added in between:
 * {@code relu(batch_norm(x) + residual)}, the composition {@code F.relu(F.batch_norm(x, ...) +
 * residual)} that torchvision's ResNet blocks apply (bn then relu; bn, add identity, relu at a
 * block's end). It gives the composition's values bit for bit in one pass over x for the output
 * (the batch-norm output and the sum are never stored) and one batch-norm backward that applies the
 * ReLU's mask as it reads the gradient; only the output y is kept for the backward besides x.
 * y is {@link Tensor#recomputableBy recomputable} from x (and the residual): a model that
 * {@link Tensor#release() releases} y after its last forward use keeps only x for the step.
 *
 * <p>On CUDA tensors, and in eval mode when a gradient is to be recorded, it runs the unfused ops
 * ({@link BatchNorm2dFunction}, add, {@link ReluFunction}), which give the same values.
 */
public final class BatchNorm2dReluFunction {
    private BatchNorm2dReluFunction() {}

    /**
     * {@code relu((x - mean) / sqrt(var + eps) * gamma + beta + residual)} per channel; arguments
     * as {@link BatchNorm2dFunction#apply}.
     *
     * @param x float32 [N, C, H, W]; in training mode N * H * W must exceed 1
     * @param gamma float32 [C] scale, or null for 1
     * @param beta float32 [C] shift, or null for 0
     * @param runningMean float32 [C], updated in place in training mode; may be null in training mode only
     * @param runningVar float32 [C], likewise
     * @param training whether to use (and update from) batch statistics
     * @param momentum weight of the batch statistics in the running-statistics update
     * @param eps added to the variance, non-negative
     * @param residual float32 of x's shape added before the ReLU, or null for none
     * @return float32 [N, C, H, W], recording a "NativeBatchNormReluBackward" node when an input requires grad
     * @throws IllegalArgumentException as {@link BatchNorm2dFunction#apply}, and if residual's shape,
     *     dtype or device differs from x's (the message names both shapes)
     */
    public static Tensor apply(Tensor x, Tensor gamma, Tensor beta, Tensor runningMean, Tensor runningVar,
            boolean training, double momentum, double eps, Tensor residual) {
        Objects.requireNonNull(x, "batch_norm2d_relu: input is null");
        boolean recordsGrad = Tensors.isGradEnabled() && (x.requiresGrad()
                || (gamma != null && gamma.requiresGrad()) || (beta != null && beta.requiresGrad())
                || (residual != null && residual.requiresGrad()));
        if (x.device().isCuda() || (!training && recordsGrad)) {
            return unfused(x, gamma, beta, runningMean, runningVar, training, momentum, eps, residual);
        }
        if ((runningMean == null) != (runningVar == null)) {
            throw new IllegalArgumentException("batch_norm2d_relu: give both running_mean and running_var, or neither");
        }
        if (!training && runningMean == null) {
            throw new IllegalArgumentException(
                    "batch_norm2d_relu: eval mode (training=false) needs running_mean and running_var");
        }
        long channels = x.dim() >= 2 ? x.size(1) : 0;
        // Absent optional tensors become temporaries, so the kernels see one form.
        Tensor g = gamma != null ? gamma : filled(1, x, channels);
        Tensor b = beta != null ? beta : filled(0, x, channels);
        long r = residual != null ? TensorHandles.nativeHandle(residual) : 0;
        try {
            if (!training) {
                return TensorHandles.fromNativeResult(NormNatives.batchNorm2dReluForwardEval(TensorHandles.nativeHandle(x), TensorHandles.nativeHandle(g),
                        TensorHandles.nativeHandle(b), TensorHandles.nativeHandle(runningMean), TensorHandles.nativeHandle(runningVar), eps, r,
                        NativeResults.buffer()));
            }
            return train(x, gamma, beta, g, b, runningMean, runningVar, channels, momentum, eps, residual, r);
        } finally {
            if (gamma == null) {
                g.close();
            }
            if (beta == null) {
                b.close();
            }
        }
    }

    private static Tensor train(Tensor x, Tensor gamma, Tensor beta, Tensor g, Tensor b, Tensor runningMean,
            Tensor runningVar, long channels, double momentum, double eps, Tensor residual, long r) {
        Tensor rm = runningMean != null ? runningMean : filled(0, x, channels);
        Tensor rv = runningVar != null ? runningVar : filled(1, x, channels);
        long[] res = NativeResults.buffer();
        Tensor out;
        Tensor saveMean;
        Tensor saveInvstd;
        Tensor affine;
        try {
            NormNatives.batchNorm2dReluForwardTrain(TensorHandles.nativeHandle(x), TensorHandles.nativeHandle(g), TensorHandles.nativeHandle(b),
                    TensorHandles.nativeHandle(rm), TensorHandles.nativeHandle(rv), momentum, eps, r, res);
            out = TensorHandles.fromNativeResult(res, 0);
            saveMean = TensorHandles.fromNativeResult(res, 1);
            saveInvstd = TensorHandles.fromNativeResult(res, 2);
            affine = TensorHandles.fromNativeResult(res, 3);
        } finally {
            if (runningMean == null) {
                rm.close();
                rv.close();
            }
        }
        // y = relu(x * scale + shift + residual) again from x, which the backward keeps anyway (and
        // the residual): the model may release y once its forward is done with it
        // (Tensor.release), and whichever backward reads y next (the next convolution's) recomputes it.
        out.recomputableBy(() -> NormNatives.batchNorm2dRecompute(TensorHandles.nativeHandle(x), TensorHandles.nativeHandle(affine),
                residual != null ? TensorHandles.nativeHandle(residual) : 0, true, NativeResults.buffer()));
        Tensor gammaForBackward = gamma != null ? gamma : filled(1, x, channels);
        // The ReLU's mask comes from the output (y > 0 ⇔ the ReLU's input > 0), or without a
        // residual from x and the affine coefficients, so y and x are all the backward keeps.
        return new Node("NativeBatchNormReluBackward", x, gamma, beta, residual) {
            @Override
            protected Tensor[] backward(Tensor gradOutput) {
                boolean wantMasked = needsInputGrad(3);
                long[] gr = NativeResults.buffer();
                // Without a residual the ReLU's mask is formed from x (the same bits), so y is neither
                // kept for this nor recomputed when it was released.
                NormNatives.batchNorm2dReluBackward(TensorHandles.nativeHandle(gradOutput),
                        residual != null ? TensorHandles.nativeHandle(out) : 0, TensorHandles.nativeHandle(x), TensorHandles.nativeHandle(gammaForBackward),
                        TensorHandles.nativeHandle(saveMean), TensorHandles.nativeHandle(saveInvstd), wantMasked,
                        residual != null ? 0 : TensorHandles.nativeHandle(affine), gr);
                // The last reader of y and of x in the backward: released ones go (Tensor.release).
                out.backwardDone();
                x.backwardDone();
                Tensor gx = TensorHandles.fromNativeResult(gr, 0);
                Tensor gGamma = TensorHandles.fromNativeResult(gr, 1);
                Tensor gBeta = TensorHandles.fromNativeResult(gr, 2);
                Tensor gResidual = wantMasked ? TensorHandles.fromNativeResult(gr, 3) : null;
                return new Tensor[] {gx, gGamma, gBeta, gResidual};
            }
        }.attach(out);
    }

    /** The composition the fused kernels stand for; used where they do not run. */
    static Tensor unfused(Tensor x, Tensor gamma, Tensor beta, Tensor runningMean, Tensor runningVar,
            boolean training, double momentum, double eps, Tensor residual) {
        Tensor y = BatchNorm2dFunction.apply(x, gamma, beta, runningMean, runningVar, training, momentum, eps);
        if (residual != null) {
            if (!Arrays.equals(y.shape(), residual.shape())) {
                throw new IllegalArgumentException("batch_norm2d_relu: residual " + Arrays.toString(residual.shape())
                        + " does not match input " + Arrays.toString(x.shape()));
            }
            y = y.add(residual);
        }
        return ReluFunction.apply(y);
    }

    /** A float32 [n] tensor of value on like's device (the defaults for absent gamma, beta, statistics). */
    private static Tensor filled(double value, Tensor like, long n) {
        return Tensor.full(value, DType.FLOAT32, like.device(), n);
    }
}
