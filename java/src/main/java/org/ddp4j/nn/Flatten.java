package org.ddp4j.nn;

import java.util.Arrays;
import org.ddp4j.tensor.Tensor;

/**
 * Flattens every dimension after the first: [N, d1, d2, ...] → [N, d1·d2·...]. Shares storage
 * with the input (a reshape). Mirrors {@code torch.nn.Flatten()} (start_dim=1, end_dim=-1).
 */
public class Flatten extends Module {
    /** Creates the layer. */
    public Flatten() {}

    /**
     * Reshapes input to [N, rest].
     *
     * @param input a tensor with at least 2 dimensions (PyTorch rejects 1-D input too)
     * @return a view of shape [size(0), product of the other sizes]
     * @throws IllegalArgumentException if input has fewer than 2 dimensions
     */
    @Override
    public Tensor forward(Tensor input) {
        if (input.dim() < 2) {
            throw new IllegalArgumentException("Flatten: input must have at least 2 dimensions [N, ...], got shape "
                    + Arrays.toString(input.shape()));
        }
        long rest = 1;
        for (int d = 1; d < input.dim(); d++) {
            rest *= input.size(d);
        }
        // Explicit sizes rather than -1, so an empty batch (N = 0) still reshapes.
        return input.reshape(input.size(0), rest);
    }

    /** PyTorch's extra_repr, e.g. "start_dim=1, end_dim=-1". */
    @Override
    protected String extraRepr() {
        return "start_dim=1, end_dim=-1";
    }
}
