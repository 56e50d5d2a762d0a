package org.ddp4j.distributed;

import java.util.List;
import org.ddp4j.tensor.Tensor;

/**
 * One DDP bucket: a flat float32 tensor whose slices are the gradients of a group of parameters,
 * so that one all-reduce covers them all without copying. Ready when every parameter in it has
 * had its gradient accumulated in this backward pass.
 */
final class GradientBucket {
    final int index;
    final List<Tensor> parameters;
    final Tensor flat;
    private int pending;
    Work work;

    GradientBucket(int index, List<Tensor> parameters, Tensor flat) {
        this.index = index;
        this.parameters = parameters;
        this.flat = flat;
        reset();
    }

    /** Starts a new backward pass: every parameter's gradient is outstanding again. */
    void reset() {
        pending = parameters.size();
        work = null;
    }

    /** Marks one parameter's gradient as accumulated; returns whether the bucket is now ready. */
    boolean markReady() {
        pending--;
        return pending == 0;
    }

    boolean isReady() {
        return pending <= 0;
    }

    long bytes() {
        return flat.numel() * 4;
    }
}
