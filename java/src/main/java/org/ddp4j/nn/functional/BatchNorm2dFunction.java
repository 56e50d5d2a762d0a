package org.ddp4j.nn.functional;

import java.util.Objects;
import org.ddp4j.internal.NormNatives;
import org.ddp4j.internal.NativeResults;
import org.ddp4j.internal.TensorHandles;
import org.ddp4j.tensor.DType;
import org.ddp4j.tensor.Node;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;

/**
 * Differentiable batch normalisation over the channels of a 4-D input, mirroring
 * {@code torch.nn.functional.batch_norm} on [N, C, H, W] input.
 *
 * <p>In training mode the output is normalised with the batch mean and the biased batch variance,
 * and the running statistics are updated in place with
 * {@code running = (1 - momentum) * running + momentum * batch}, using the unbiased variance
 * (n / (n - 1)) for running_var. In eval mode the running statistics normalise the input and are
 * left unchanged. Both modes are differentiable with respect to x, gamma and beta. A CPU output
 * of training mode is {@link Tensor#recomputableBy recomputable} from x: a model may
 * {@link Tensor#release() release} it once its forward is done with it.
 */
public final class BatchNorm2dFunction {
    private BatchNorm2dFunction() {}

    /**
     * y = (x - mean) / sqrt(var + eps) * gamma + beta per channel.
     *
     * @param x float32 [N, C, H, W]; in training mode N * H * W must exceed 1
     * @param gamma float32 [C] scale, or null for 1 (affine=False)
     * @param beta float32 [C] shift, or null for 0
     * @param runningMean float32 [C], updated in place in training mode; may be null in training
     *     mode only (no running statistics)
     * @param runningVar float32 [C], likewise
     * @param training whether to use (and update from) batch statistics
     * @param momentum weight of the batch statistics in the running-statistics update (PyTorch's default 0.1)
     * @param eps added to the variance for stability (PyTorch's default 1e-5), non-negative
     * @return float32 [N, C, H, W]
     * @throws IllegalArgumentException if x is not 4-D float32, a per-channel tensor does not have C
     *     elements (the message names both shapes), eval mode lacks running statistics, or training
     *     mode has only one value per channel
     */
    public static Tensor apply(Tensor x, Tensor gamma, Tensor beta, Tensor runningMean, Tensor runningVar,
            boolean training, double momentum, double eps) {
        Objects.requireNonNull(x, "batch_norm2d: input is null");
        if ((runningMean == null) != (runningVar == null)) {
            throw new IllegalArgumentException("batch_norm2d: give both running_mean and running_var, or neither");
        }
        if (!training && runningMean == null) {
            throw new IllegalArgumentException("batch_norm2d: eval mode (training=false) needs running_mean and running_var");
        }
        long channels = x.dim() >= 2 ? x.size(1) : 0;
        // Absent optional tensors become temporaries, so the kernels see one form.
        Tensor g = gamma != null ? gamma : filled(1, x, channels);
        Tensor b = beta != null ? beta : filled(0, x, channels);
        try {
            return training
                    ? train(x, gamma, beta, g, b, runningMean, runningVar, channels, momentum, eps)
                    : eval(x, gamma, beta, g, b, runningMean, runningVar, eps);
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
            Tensor runningVar, long channels, double momentum, double eps) {
        Tensor rm = runningMean != null ? runningMean : filled(0, x, channels);
        Tensor rv = runningVar != null ? runningVar : filled(1, x, channels);
        long[] r = NativeResults.buffer();
        Tensor out;
        Tensor saveMean;
        Tensor saveInvstd;
        Tensor affine;
        try {
            NormNatives.batchNorm2dForwardTrain(TensorHandles.nativeHandle(x), TensorHandles.nativeHandle(g), TensorHandles.nativeHandle(b),
                    TensorHandles.nativeHandle(rm), TensorHandles.nativeHandle(rv), momentum, eps, r);
            out = TensorHandles.fromNativeResult(r, 0);
            saveMean = TensorHandles.fromNativeResult(r, 1);
            saveInvstd = TensorHandles.fromNativeResult(r, 2);
            affine = TensorHandles.fromNativeResult(r, 3); // CPU only
        } finally {
            if (runningMean == null) {
                rm.close();
                rv.close();
            }
        }
        if (affine != null) {
            // y = x * scale + shift again from x, which the backward keeps anyway, so a model may
            // release y (Tensor.release) once its forward is done with it.
            out.recomputableBy(() -> NormNatives.batchNorm2dRecompute(TensorHandles.nativeHandle(x), TensorHandles.nativeHandle(affine), 0,
                    false, NativeResults.buffer()));
        }
        // gamma stays needed by the backward; a temporary one is copied so closing it here is safe.
        Tensor gammaForBackward = gamma != null ? gamma : filled(1, x, channels);
        return new Node("NativeBatchNormBackward", x, gamma, beta) {
            @Override
            protected Tensor[] backward(Tensor gradOutput) {
                long[] gr = NativeResults.buffer();
                NormNatives.batchNorm2dBackward(TensorHandles.nativeHandle(gradOutput), TensorHandles.nativeHandle(x),
                        TensorHandles.nativeHandle(gammaForBackward), TensorHandles.nativeHandle(saveMean), TensorHandles.nativeHandle(saveInvstd), gr);
                // Everything that reads y comes later in the forward, so its backward has run: a
                // released y that a recomputation brought back goes again, and so does a released x.
                out.backwardDone();
                x.backwardDone();
                Tensor gx = TensorHandles.fromNativeResult(gr, 0);
                Tensor gGamma = TensorHandles.fromNativeResult(gr, 1);
                Tensor gBeta = TensorHandles.fromNativeResult(gr, 2);
                return new Tensor[] {gx, gGamma, gBeta};
            }
        }.attach(out);
    }

    private static Tensor eval(Tensor x, Tensor gamma, Tensor beta, Tensor g, Tensor b, Tensor runningMean,
            Tensor runningVar, double eps) {
        Tensor out = TensorHandles.fromNativeResult(NormNatives.batchNorm2dForwardEval(TensorHandles.nativeHandle(x), TensorHandles.nativeHandle(g),
                TensorHandles.nativeHandle(b), TensorHandles.nativeHandle(runningMean), TensorHandles.nativeHandle(runningVar), eps, NativeResults.buffer()));
        boolean recorded = Tensors.isGradEnabled()
                && (x.requiresGrad() || (gamma != null && gamma.requiresGrad()) || (beta != null && beta.requiresGrad()));
        if (!recorded) {
            return out;
        }
        // Eval mode is a per-channel affine map with fixed statistics; save them as they are now,
        // since a later training step may update the running buffers before this backward runs.
        float[] var = runningVar.toFloatArray();
        float[] invstd = new float[var.length];
        for (int c = 0; c < var.length; c++) {
            invstd[c] = (float) (1.0 / Math.sqrt(var[c] + eps));
        }
        Tensor savedMean = runningMean.copy();
        Tensor savedInvstd = Tensor.of(invstd, invstd.length).to(x.device());
        Tensor gammaForBackward = gamma != null ? gamma : filled(1, x, invstd.length);
        return new Node("NativeBatchNormBackward", x, gamma, beta) {
            @Override
            protected Tensor[] backward(Tensor gradOutput) {
                Tensor gx = null;
                if (needsInputGrad(0)) {
                    // gx = gy * gamma * invstd: the eval kernel with mean 0, variance 1, eps 0 and
                    // scale gamma * invstd computes exactly that product.
                    float[] gm = gammaForBackward.toFloatArray();
                    float[] scale = new float[gm.length];
                    for (int c = 0; c < gm.length; c++) {
                        scale[c] = gm[c] * invstd[c];
                    }
                    try (Tensor s = Tensor.of(scale, scale.length).to(x.device()); Tensor zeros = filled(0, x, scale.length);
                            Tensor ones = filled(1, x, scale.length)) {
                        gx = TensorHandles.fromNativeResult(NormNatives.batchNorm2dForwardEval(TensorHandles.nativeHandle(gradOutput),
                                TensorHandles.nativeHandle(s), TensorHandles.nativeHandle(zeros), TensorHandles.nativeHandle(zeros), TensorHandles.nativeHandle(ones), 0,
                                NativeResults.buffer()));
                    }
                }
                Tensor gGamma = null;
                Tensor gBeta = null;
                if (needsInputGrad(1) || needsInputGrad(2)) {
                    // With the running statistics as the "saved" ones, the training backward's
                    // gamma and beta gradients (Σ gy * xhat, Σ gy) are the eval-mode ones too.
                    long[] gr = NativeResults.buffer();
                    NormNatives.batchNorm2dBackward(TensorHandles.nativeHandle(gradOutput), TensorHandles.nativeHandle(x),
                            TensorHandles.nativeHandle(gammaForBackward), TensorHandles.nativeHandle(savedMean), TensorHandles.nativeHandle(savedInvstd), gr);
                    Tensor unused = TensorHandles.fromNativeResult(gr, 0);
                    gGamma = TensorHandles.fromNativeResult(gr, 1);
                    gBeta = TensorHandles.fromNativeResult(gr, 2);
                    unused.close();
                }
                return new Tensor[] {gx, gGamma, gBeta};
            }
        }.attach(out);
    }

    /** A float32 [n] tensor of value on like's device (the defaults for absent gamma, beta, statistics). */
    private static Tensor filled(double value, Tensor like, long n) {
        return Tensor.full(value, DType.FLOAT32, like.device(), n);
    }
}
