package org.ddp4j.nn;

import org.ddp4j.nn.functional.BatchNorm2dFunction;
import org.ddp4j.nn.functional.BatchNorm2dReluFunction;
import org.ddp4j.tensor.DType;
import org.ddp4j.tensor.Device;
import org.ddp4j.tensor.Tensor;

/**
 * Batch normalisation over the channels of [N, C, H, W] input: PyTorch's {@code torch.nn.BatchNorm2d}.
 * With {@code affine} (the default) it has parameters {@code weight} (ones) and {@code bias} (zeros),
 * float32 [C]; with {@code trackRunningStats} (the default) buffers {@code running_mean} (zeros) and
 * {@code running_var} (ones), float32 [C], and {@code num_batches_tracked}, an int64 scalar counting
 * training forwards. Absent parameters and buffers are not registered (PyTorch's None): they are
 * missing from {@link #parameters()} and {@link #stateDict()}, and their getters return null.
 *
 * <p>In training mode ({@link #isTraining()}) the layer normalises with the batch statistics
 * (biased variance) and updates the running ones, {@code running = (1 - f) running + f batch}
 * (unbiased variance for running_var), where f is {@code momentum}, or {@code 1 / num_batches_tracked}
 * (a cumulative average) when momentum is null. In eval mode it normalises with the running
 * statistics, or with the batch's when it tracks none.
 */
public class BatchNorm2d extends Module {
    private final int numFeatures;
    private final double eps;
    private final Double momentum;
    private final boolean affine;
    private final boolean trackRunningStats;
    private final Tensor weight;
    private final Tensor bias;
    private final Tensor runningMean;
    private final Tensor runningVar;
    private final Tensor numBatchesTracked;

    /** The mirrored value of num_batches_tracked on a GPU; -1: read the buffer. */
    private long countOnDevice = -1;

    /**
     * The SyncBatchNorm that replaced this layer in {@link SyncBatchNorm#convertSyncBatchnorm}, or
     * null. It shares this layer's tensors; a forward through a reference still held to this layer
     * (a model's field) runs it, so a converted model never normalises with this rank's statistics alone.
     */
    private SyncBatchNorm convertedTo;

    /** With PyTorch's defaults: eps 1e-5, momentum 0.1, affine, tracking running statistics. */
    public BatchNorm2d(int numFeatures) {
        this(numFeatures, 1e-5, 0.1);
    }

    /**
     * A layer with the given eps and momentum, affine, tracking running statistics.
     *
     * @param numFeatures the channel count C
     * @param eps added to the variance for stability (non-negative)
     * @param momentum weight of each batch in the running statistics, in [0, 1]
     * @throws IllegalArgumentException if numFeatures is not positive, eps is negative or momentum is outside [0, 1]
     */
    public BatchNorm2d(int numFeatures, double eps, double momentum) {
        this(numFeatures, eps, Double.valueOf(momentum), true, true);
    }

    /**
     * A layer with every option of {@code torch.nn.BatchNorm2d(num_features, eps, momentum, affine,
     * track_running_stats)}.
     *
     * @param numFeatures the channel count C
     * @param eps added to the variance for stability (non-negative)
     * @param momentum weight of each batch in the running statistics, in [0, 1], or null for a
     *     cumulative moving average (PyTorch's {@code momentum=None})
     * @param affine whether the layer has the learnable per-channel weight and bias
     * @param trackRunningStats whether the layer keeps running statistics (and uses them in eval mode)
     * @throws IllegalArgumentException if numFeatures is not positive, eps is negative or momentum is outside [0, 1]
     */
    public BatchNorm2d(int numFeatures, double eps, Double momentum, boolean affine, boolean trackRunningStats) {
        if (numFeatures <= 0 || !(eps >= 0) || (momentum != null && !(momentum >= 0 && momentum <= 1))) {
            throw new IllegalArgumentException("BatchNorm2d(numFeatures=" + numFeatures + ", eps=" + eps + ", momentum="
                    + momentum + "): numFeatures must be positive, eps non-negative, momentum in [0, 1] or null");
        }
        this.numFeatures = numFeatures;
        this.eps = eps;
        this.momentum = momentum;
        this.affine = affine;
        this.trackRunningStats = trackRunningStats;
        this.weight = affine ? registerParameter("weight", Tensor.ones(numFeatures)) : null;
        this.bias = affine ? registerParameter("bias", Tensor.zeros(numFeatures)) : null;
        this.runningMean = trackRunningStats ? registerBuffer("running_mean", Tensor.zeros(numFeatures)) : null;
        this.runningVar = trackRunningStats ? registerBuffer("running_var", Tensor.ones(numFeatures)) : null;
        this.numBatchesTracked = trackRunningStats
                ? registerBuffer("num_batches_tracked", Tensor.full(0, DType.INT64, Device.CPU)) : null;
    }

    /**
     * Normalises input [N, C, H, W] (float32); in training mode with running statistics also
     * updates them and increments {@code num_batches_tracked}. An empty batch (N x H x W = 0) gives
     * an empty output and leaves the statistics alone (still counted), as PyTorch.
     *
     * @throws IllegalArgumentException if the input is not 4-D float32, has other than C channels, or
     *     (batch statistics) has only one value per channel
     */
    @Override
    public Tensor forward(Tensor input) {
        return normalize(input, false, null);
    }

    /**
     * {@code relu(forward(input) + residual)} in one pass ({@link BatchNorm2dReluFunction}): what
     * torchvision's blocks compute as {@code relu(bn(x))} (residual null) and {@code relu(bn(x) +
     * identity)}, with the same values, running statistics and {@code num_batches_tracked} as
     * {@link #forward} followed by the addition and {@code ReLU}.
     *
     * @param input float32 [N, C, H, W]
     * @param residual float32 of input's shape, or null for none
     * @throws IllegalArgumentException as {@link #forward}, and if residual's shape differs from input's
     */
    public Tensor forwardRelu(Tensor input, Tensor residual) {
        return normalize(input, true, residual);
    }

    /**
     * A layer on the same parameter and buffer tensors as source (not copies), with its options,
     * training flag and requires-grad flags: what {@link SyncBatchNorm#convertSyncBatchnorm} builds on.
     */
    BatchNorm2d(BatchNorm2d source) {
        this.numFeatures = source.numFeatures;
        this.eps = source.eps;
        this.momentum = source.momentum;
        this.affine = source.affine;
        this.trackRunningStats = source.trackRunningStats;
        this.weight = source.weight == null ? null : registerParameterKeepingFlag("weight", source.weight);
        this.bias = source.bias == null ? null : registerParameterKeepingFlag("bias", source.bias);
        this.runningMean = source.runningMean == null ? null : registerBuffer("running_mean", source.runningMean);
        this.runningVar = source.runningVar == null ? null : registerBuffer("running_var", source.runningVar);
        this.numBatchesTracked = source.numBatchesTracked == null ? null
                : registerBuffer("num_batches_tracked", source.numBatchesTracked);
        train(source.isTraining());
    }

    private Tensor registerParameterKeepingFlag(String name, Tensor t) {
        boolean requiresGrad = t.requiresGrad();
        return registerParameter(name, t).requiresGrad(requiresGrad);
    }

    /** Marks this layer as replaced by its converted form (see {@link #convertedTo}). */
    void convertedTo(SyncBatchNorm replacement) {
        this.convertedTo = replacement;
    }

    /** Sets the mode here and, once converted, in the SyncBatchNorm that replaced this layer. */
    @Override
    public Module train(boolean mode) {
        super.train(mode);
        if (convertedTo != null) {
            convertedTo.train(mode);
        }
        return this;
    }

    private Tensor normalize(Tensor input, boolean relu, Tensor residual) {
        if (convertedTo != null) {
            return ((BatchNorm2d) convertedTo).normalize(input, relu, residual);
        }
        if (!trackRunningStats) {
            // No running statistics: batch statistics in both modes, as PyTorch.
            return apply(input, null, null, true, 0, relu, residual);
        }
        if (isTraining()) {
            long next = trackedCount() + 1;
            double factor = momentum != null ? momentum : 1.0 / next;
            Tensor out = apply(input, runningMean, runningVar, true, factor, relu, residual);
            numBatchesTracked.fill(next);
            countOnDevice = next;
            return out;
        }
        return apply(input, runningMean, runningVar, false, 0, relu, residual);
    }

    /**
     * Normalises with batch statistics (training) or the given ones, updating mean and var (when
     * not null) with factor; SyncBatchNorm overrides it to take the batch statistics over its group.
     */
    Tensor apply(Tensor input, Tensor mean, Tensor var, boolean training, double factor, boolean relu,
            Tensor residual) {
        return relu
                ? BatchNorm2dReluFunction.apply(input, weight, bias, mean, var, training, factor, eps, residual)
                : BatchNorm2dFunction.apply(input, weight, bias, mean, var, training, factor, eps);
    }

    /** The scale parameter gamma [C], or null without affine. */
    public Tensor weight() {
        return weight;
    }

    /** The shift parameter beta [C], or null without affine. */
    public Tensor bias() {
        return bias;
    }

    /** The running mean buffer [C], or null without running statistics. */
    public Tensor runningMean() {
        return runningMean;
    }

    /** The running (unbiased) variance buffer [C], or null without running statistics. */
    public Tensor runningVar() {
        return runningVar;
    }

    /** The number of training forwards so far (the {@code num_batches_tracked} buffer); 0 without running statistics. */
    public long numBatchesTracked() {
        return trackedCount();
    }

    /**
     * The buffer's value. On a GPU it is read once and then mirrored here, since reading it each
     * step would stall the host on the GPU; a state-dict load makes it read again. (DDP's buffer
     * broadcast writes rank 0's count, which equals every rank's.)
     */
    private long trackedCount() {
        if (numBatchesTracked == null) {
            return 0;
        }
        if (countOnDevice < 0 || !numBatchesTracked.device().isCuda()) {
            countOnDevice = numBatchesTracked.toLongArray()[0];
        }
        return countOnDevice;
    }

    @Override
    protected void onStateLoaded() {
        countOnDevice = -1;
    }

    /** The channel count C. */
    public int numFeatures() {
        return numFeatures;
    }

    /** The value added to the variance. */
    public double eps() {
        return eps;
    }

    /** The weight of each batch in the running statistics, or null for a cumulative average. */
    public Double momentum() {
        return momentum;
    }

    /** Whether the layer has a learnable weight and bias. */
    public boolean affine() {
        return affine;
    }

    /** Whether the layer keeps running statistics. */
    public boolean trackRunningStats() {
        return trackRunningStats;
    }

    /** PyTorch's extra_repr, printed inside {@code BatchNorm2d(16, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)}. */
    @Override
    protected String extraRepr() {
        return numFeatures + ", eps=" + ReprFormat.pythonFloat(eps) + ", momentum="
                + (momentum == null ? "None" : ReprFormat.pythonFloat(momentum)) + ", affine=" + (affine ? "True" : "False")
                + ", track_running_stats=" + (trackRunningStats ? "True" : "False");
    }
}
