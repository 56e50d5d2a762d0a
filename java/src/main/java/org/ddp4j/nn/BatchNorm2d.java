package org.ddp4j.nn;

import org.ddp4j.nn.functional.BatchNorm2dFunction;
import org.ddp4j.tensor.DType;
import org.ddp4j.tensor.Device;
import org.ddp4j.tensor.Tensor;

/**
 * Batch normalisation over the channels of [N, C, H, W] input: PyTorch's {@code torch.nn.BatchNorm2d}
 * (affine, tracking running statistics). Parameters {@code weight} (ones) and {@code bias} (zeros),
 * float32 [C]; buffers {@code running_mean} (zeros) and {@code running_var} (ones), float32 [C],
 * and {@code num_batches_tracked}, an int64 scalar counting training forwards.
 *
 * <p>In training mode ({@link #isTraining()}) the layer normalises with the batch statistics
 * (biased variance) and updates the running ones with {@code momentum} (unbiased variance); in
 * eval mode it normalises with the running statistics.
 */
public class BatchNorm2d extends Module {
    private final int numFeatures;
    private final double eps;
    private final double momentum;
    private final Tensor weight;
    private final Tensor bias;
    private final Tensor runningMean;
    private final Tensor runningVar;
    private final Tensor numBatchesTracked;

    /** The mirrored value of num_batches_tracked on a GPU; -1: read the buffer. */
    private long countOnDevice = -1;

    /** With PyTorch's defaults: eps 1e-5, momentum 0.1. */
    public BatchNorm2d(int numFeatures) {
        this(numFeatures, 1e-5, 0.1);
    }

    /**
     * A layer with the given eps and momentum.
     *
     * @param numFeatures the channel count C
     * @param eps added to the variance for stability (non-negative)
     * @param momentum weight of each batch in the running statistics, in [0, 1]
     * @throws IllegalArgumentException if numFeatures is not positive, eps is negative or momentum is outside [0, 1]
     */
    public BatchNorm2d(int numFeatures, double eps, double momentum) {
        if (numFeatures <= 0 || !(eps >= 0) || !(momentum >= 0 && momentum <= 1)) {
            throw new IllegalArgumentException("BatchNorm2d(numFeatures=" + numFeatures + ", eps=" + eps + ", momentum="
                    + momentum + "): numFeatures must be positive, eps non-negative, momentum in [0, 1]");
        }
        this.numFeatures = numFeatures;
        this.eps = eps;
        this.momentum = momentum;
        this.weight = registerParameter("weight", Tensor.ones(numFeatures));
        this.bias = registerParameter("bias", Tensor.zeros(numFeatures));
        this.runningMean = registerBuffer("running_mean", Tensor.zeros(numFeatures));
        this.runningVar = registerBuffer("running_var", Tensor.ones(numFeatures));
        this.numBatchesTracked = registerBuffer("num_batches_tracked", Tensor.full(0, DType.INT64, Device.CPU));
    }

    /**
     * Normalises input [N, C, H, W] (float32); in training mode also updates the running statistics
     * and increments {@code num_batches_tracked}.
     *
     * @throws IllegalArgumentException if the input is not 4-D float32, has other than C channels, or
     *     (training) has only one value per channel
     */
    @Override
    public Tensor forward(Tensor input) {
        if (isTraining()) {
            Tensor out = BatchNorm2dFunction.apply(input, weight, bias, runningMean, runningVar, true, momentum, eps);
            long next = trackedCount() + 1;
            numBatchesTracked.fill(next);
            countOnDevice = next;
            return out;
        }
        return BatchNorm2dFunction.apply(input, weight, bias, runningMean, runningVar, false, momentum, eps);
    }

    /** The scale parameter gamma [C]. */
    public Tensor weight() {
        return weight;
    }

    /** The shift parameter beta [C]. */
    public Tensor bias() {
        return bias;
    }

    /** The running mean buffer [C]. */
    public Tensor runningMean() {
        return runningMean;
    }

    /** The running (unbiased) variance buffer [C]. */
    public Tensor runningVar() {
        return runningVar;
    }

    /** The number of training forwards so far (the {@code num_batches_tracked} buffer). */
    public long numBatchesTracked() {
        return trackedCount();
    }

    /**
     * The buffer's value. On a GPU it is read once and then mirrored here, since reading it each
     * step would stall the host on the GPU; a state-dict load makes it read again. (DDP's buffer
     * broadcast writes rank 0's count, which equals every rank's.)
     */
    private long trackedCount() {
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

    /** The weight of each batch in the running statistics. */
    public double momentum() {
        return momentum;
    }

    /** PyTorch's extra_repr, printed inside {@code BatchNorm2d(16, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)}. */
    @Override
    protected String extraRepr() {
        return numFeatures + ", eps=" + ReprFormat.pythonFloat(eps) + ", momentum=" + ReprFormat.pythonFloat(momentum)
                + ", affine=True, track_running_stats=True";
    }
}
