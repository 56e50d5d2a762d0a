package org.ddp4j.nn.functional;

import java.util.Arrays;
import java.util.Objects;
import org.ddp4j.distributed.CollectiveMismatchException;
import org.ddp4j.distributed.DistributedException;
import org.ddp4j.distributed.ProcessGroup;
import org.ddp4j.distributed.ReduceOp;
import org.ddp4j.internal.LinearNatives;
import org.ddp4j.internal.NativeResults;
import org.ddp4j.internal.SyncBatchNormNatives;
import org.ddp4j.internal.TensorHandles;
import org.ddp4j.tensor.DType;
import org.ddp4j.tensor.Node;
import org.ddp4j.tensor.Tensor;

/**
 * Training-mode batch normalisation with the statistics of the whole group: what
 * {@code torch.nn.SyncBatchNorm} computes in training mode ({@code torch.nn.modules._functions.SyncBatchNorm}),
 * on the CPU (Gloo or shared memory) as on the GPU (NCCL).
 *
 * <p>Forward: each rank computes its per-channel count, mean and sum of squared deviations in one
 * native pass (sums in double), one all-gather brings every rank's row to every rank, and a native
 * kernel combines them in double (Chan's parallel variance, robust to unequal batches and to a rank
 * with no values at all); the output is normalised with the group's mean and biased variance, and
 * the running statistics are updated with its unbiased variance. Backward: each rank's
 * {@code Σ gy} and {@code Σ gy (x - mean)} per channel, one all-reduce of the two, and the input
 * gradient with the group's sums and count. The weight and bias gradients are this rank's sums, as
 * in PyTorch (DistributedDataParallel then averages them over the ranks).
 *
 * <p>Every rank of the group must call it, in the same order as the other collectives, also with an
 * empty batch (N = 0: the rank contributes nothing, returns an empty output, and still takes part
 * in the backward's all-reduce when a gradient flows to x).
 */
public final class SyncBatchNormFunction {
    private SyncBatchNormFunction() {}

    /**
     * Normalises x with the group's batch statistics.
     *
     * @param x float32 [N, C, ...] (at least 2-D) on the group's device; N may differ between ranks, and be 0
     * @param gamma float32 [C] scale, or null for 1 (affine=False)
     * @param beta float32 [C] shift, or null for 0
     * @param runningMean float32 [C] updated in place, or null (no running statistics; then runningVar null too)
     * @param runningVar float32 [C], likewise (unbiased variance)
     * @param momentum weight of the batch statistics in the running-statistics update
     * @param eps added to the variance, non-negative
     * @param group the ranks whose batches are normalised together (all of them call this)
     * @return float32 of x's shape, recording a "SyncBatchNormBackward" node when an input requires grad
     * @throws IllegalArgumentException if x is not float32 of at least 2 dimensions, a per-channel
     *     tensor does not have C elements, x is not on the group's device, or the group has at most
     *     one value per channel in all (then on every rank, after the all-gather)
     * @throws org.ddp4j.distributed.DistributedException if the all-gather fails (a peer died, timeout)
     */
    public static Tensor apply(Tensor x, Tensor gamma, Tensor beta, Tensor runningMean, Tensor runningVar,
            double momentum, double eps, ProcessGroup group) {
        return normalize(x, gamma, beta, runningMean, runningVar, momentum, eps, group, false, null);
    }

    /**
     * {@code relu(apply(...) + residual)} with the batch norm's output written once: what
     * {@link BatchNorm2dReluFunction} is to BatchNorm2d (the ResNet blocks' bn then relu, and bn, +
     * identity, relu), with the same values as the separate ops. The backward applies the ReLU's
     * mask to the gradient (the residual's gradient) and then runs the synchronised backward on it.
     *
     * @param residual float32 of x's shape added before the ReLU, or null for none
     * @return float32 of x's shape, recording a "SyncBatchNormReluBackward" node when an input requires grad
     * @throws IllegalArgumentException as {@link #apply}, and if residual's shape, dtype or device differs from x's
     */
    public static Tensor applyRelu(Tensor x, Tensor gamma, Tensor beta, Tensor runningMean, Tensor runningVar,
            double momentum, double eps, ProcessGroup group, Tensor residual) {
        return normalize(x, gamma, beta, runningMean, runningVar, momentum, eps, group, true, residual);
    }

    private static Tensor normalize(Tensor x, Tensor gamma, Tensor beta, Tensor runningMean, Tensor runningVar,
            double momentum, double eps, ProcessGroup group, boolean relu, Tensor residual) {
        Objects.requireNonNull(x, "sync_batch_norm: input is null");
        Objects.requireNonNull(group, "sync_batch_norm: process group is null");
        if ((runningMean == null) != (runningVar == null)) {
            throw new IllegalArgumentException("sync_batch_norm: give both running_mean and running_var, or neither");
        }
        if (x.dim() < 2) {
            throw new IllegalArgumentException("sync_batch_norm: expected at least 2-D input [N, C, ...], got "
                    + Arrays.toString(x.shape()));
        }
        if (!x.device().equals(group.device())) {
            throw new IllegalArgumentException("sync_batch_norm: the input is " + x.describe() + " but the "
                    + group.backend() + " group works on " + group.device() + ": move the model and its input to "
                    + group.device() + ", or pass a group of that device");
        }
        if (residual != null && !Arrays.equals(residual.shape(), x.shape())) {
            // Before the collective: a local mistake must not leave the other ranks waiting.
            throw new IllegalArgumentException("sync_batch_norm_relu: residual " + Arrays.toString(residual.shape())
                    + " does not match input " + Arrays.toString(x.shape()));
        }
        long channels = x.size(1);
        Tensor g = gamma != null ? gamma : filled(1, x, channels);
        Tensor b = beta != null ? beta : filled(0, x, channels);
        Tensor saveMean;
        Tensor saveInvstd;
        Tensor saveMeanLo;
        long count;
        Tensor out;
        try {
            try (Tensor stats = TensorHandles.fromNativeResult(SyncBatchNormNatives.syncBatchNormStats(TensorHandles.nativeHandle(x),
                    NativeResults.buffer()));
                    Tensor gathered = Tensor.full(0, DType.FLOAT32, x.device(), group.size() * stats.numel())) {
                try {
                    group.allGatherIntoTensor(gathered, stats).await();
                } catch (DistributedException e) {
                    throw namingTheLayer(e, channels, group, "statistics all-gather");
                }
                long[] r = NativeResults.buffer();
                count = SyncBatchNormNatives.syncBatchNormGatherStats(TensorHandles.nativeHandle(gathered), channels,
                        runningMean != null ? TensorHandles.nativeHandle(runningMean) : 0,
                        runningVar != null ? TensorHandles.nativeHandle(runningVar) : 0, momentum, eps, r);
                saveMean = TensorHandles.fromNativeResult(r, 0);
                saveInvstd = TensorHandles.fromNativeResult(r, 1);
                saveMeanLo = TensorHandles.fromNativeResult(r, 2);
            }
            out = TensorHandles.fromNativeResult(SyncBatchNormNatives.syncBatchNormElemt(TensorHandles.nativeHandle(x),
                    TensorHandles.nativeHandle(saveMean), TensorHandles.nativeHandle(saveMeanLo), TensorHandles.nativeHandle(saveInvstd), TensorHandles.nativeHandle(g),
                    TensorHandles.nativeHandle(b), residual != null ? TensorHandles.nativeHandle(residual) : 0, relu, NativeResults.buffer()));
        } finally {
            if (beta == null) {
                b.close();
            }
            if (gamma == null) {
                g.close();
            }
        }
        Tensor gammaForBackward = gamma != null ? gamma : filled(1, x, channels);
        final long total = count;
        return new Node(relu ? "SyncBatchNormReluBackward" : "SyncBatchNormBackward", x, gamma, beta, residual) {
            @Override
            protected Tensor[] backward(Tensor gradOutput) {
                // Under the ReLU: its mask on the gradient first (y > 0 ⇔ the ReLU's input > 0);
                // that masked gradient is also the residual's.
                Tensor gy = relu ? TensorHandles.fromNativeResult(LinearNatives.reluBackward(TensorHandles.nativeHandle(gradOutput),
                        TensorHandles.nativeHandle(out), NativeResults.buffer())) : gradOutput;
                long[] gr = NativeResults.buffer();
                SyncBatchNormNatives.syncBatchNormBackwardReduce(TensorHandles.nativeHandle(gy), TensorHandles.nativeHandle(x),
                        TensorHandles.nativeHandle(saveMean), TensorHandles.nativeHandle(saveMeanLo), TensorHandles.nativeHandle(saveInvstd), gr);
                Tensor gx = null;
                try (Tensor sums = TensorHandles.fromNativeResult(gr, 0)) {
                    Tensor gGamma = TensorHandles.fromNativeResult(gr, 1);
                    Tensor gBeta = TensorHandles.fromNativeResult(gr, 2);
                    // As PyTorch: the input gradient needs the group's sums; the weight and bias
                    // gradients stay this rank's (DDP averages them).
                    if (needsInputGrad(0)) {
                        try {
                            group.allReduce(sums, ReduceOp.SUM).await();
                        } catch (DistributedException e) {
                            throw namingTheLayer(e, channels, group, "gradient all-reduce");
                        }
                        gx = TensorHandles.fromNativeResult(SyncBatchNormNatives.syncBatchNormBackwardElemt(TensorHandles.nativeHandle(gy),
                                TensorHandles.nativeHandle(x), TensorHandles.nativeHandle(saveMean), TensorHandles.nativeHandle(saveMeanLo),
                                TensorHandles.nativeHandle(saveInvstd), TensorHandles.nativeHandle(gammaForBackward), TensorHandles.nativeHandle(sums), total,
                                NativeResults.buffer()));
                    }
                    Tensor gResidual = null;
                    if (relu && needsInputGrad(3)) {
                        gResidual = gy;
                    } else if (relu) {
                        gy.close();
                    }
                    return new Tensor[] {gx, gGamma, gBeta, gResidual};
                }
            }
        }.attach(out);
    }

    /** A float32 [n] tensor of value on like's device (the defaults for absent gamma and beta). */
    private static Tensor filled(double value, Tensor like, long n) {
        return Tensor.full(value, DType.FLOAT32, like.device(), n);
    }

    /**
     * A failed statistics all-gather or gradient all-reduce, naming the layer: a mismatch (most often another rank's
     * SyncBatchNorm with a different channel count, whose statistics have another size) or a
     * timeout or lost peer (a rank that never reached this layer). No {@code ddp.join()} hint:
     * join() cannot shadow SyncBatchNorm's collectives.
     */
    private static DistributedException namingTheLayer(DistributedException e, long channels, ProcessGroup group,
            String collective) {
        String layer = "SyncBatchNorm over " + channels + " channels on rank " + group.rank() + ": its " + collective
                + " failed: ";
        String hint = e instanceof CollectiveMismatchException
                ? ". Every rank must run the same SyncBatchNorm layers, with the same number of channels, in the same order"
                : ". Every rank must reach this layer in the same step";
        return e.explained(layer, hint);
    }
}
