package org.ddp4j.distributed.algorithms.ddpcommhooks;

import java.util.List;
import org.ddp4j.tensor.Tensor;

/**
 * What a DDP communication hook gets for one bucket: PyTorch's {@code torch.distributed.GradBucket}.
 *
 * <p>{@link #buffer()} is the bucket's flat float32 gradient (every parameter's gradient, one
 * slice each, in {@link #parameters()} order); {@link #gradients()} are those slices shaped as
 * their parameters (views of the buffer: writing one writes the buffer). The hook may reduce the
 * buffer in place and return it, or return another float32 tensor of the buffer's size, which DDP
 * copies into the buffer. DDP makes the buckets; a test may make one over its own tensors.
 */
public final class GradBucket {
    private final int index;
    private final Tensor buffer;
    private final List<Tensor> parameters;
    private final List<Tensor> gradients;
    private final boolean last;

    /**
     * @param index the bucket's index (0 is launched first; DDP's bucket 0 holds the last parameters)
     * @param buffer float32 [numel]: the gradients of {@code parameters}, flat
     * @param parameters the bucket's parameters, in buffer order
     * @param gradients views of {@code buffer}, one per parameter, shaped as it
     * @param last whether this is the last bucket DDP hands to the hook in an iteration
     */
    public GradBucket(int index, Tensor buffer, List<Tensor> parameters, List<Tensor> gradients, boolean last) {
        if (parameters.size() != gradients.size()) {
            throw new IllegalArgumentException("GradBucket: " + parameters.size() + " parameters but " + gradients.size()
                    + " gradients; pass one gradient view per parameter");
        }
        this.index = index;
        this.buffer = buffer;
        this.parameters = List.copyOf(parameters);
        this.gradients = List.copyOf(gradients);
        this.last = last;
    }

    /** The bucket's index. Mirrors {@code GradBucket.index()}. */
    public int index() {
        return index;
    }

    /** The flat float32 gradient, [numel]. Mirrors {@code GradBucket.buffer()}. */
    public Tensor buffer() {
        return buffer;
    }

    /** The parameters whose gradients the bucket holds, in buffer order. Mirrors {@code GradBucket.parameters()}. */
    public List<Tensor> parameters() {
        return parameters;
    }

    /** Each parameter's gradient: views of the buffer, shaped as the parameters. Mirrors {@code GradBucket.gradients()}. */
    public List<Tensor> gradients() {
        return gradients;
    }

    /** Whether this is the iteration's last bucket (PowerSGD counts iterations on it). Mirrors {@code GradBucket.is_last()}. */
    public boolean isLast() {
        return last;
    }
}
