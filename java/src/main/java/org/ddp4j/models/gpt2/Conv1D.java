package org.ddp4j.models.gpt2;

import org.ddp4j.nn.Init;
import org.ddp4j.nn.Module;
import org.ddp4j.nn.functional.Functional;
import org.ddp4j.tensor.Generator;
import org.ddp4j.tensor.Tensor;

/**
 * GPT-2's fully connected layer in Hugging Face's layout ({@code transformers.pytorch_utils.Conv1D}):
 * {@code y = x · weight + bias} with weight stored [in, out], the transpose of a Linear's, so
 * checkpoints in that layout load as they are. Parameters "weight" [nx, nf] drawn from
 * N(0, std²) and "bias" [nf] zeros.
 */
public class Conv1D extends Module {
    private final Tensor weight;
    private final Tensor bias;

    /**
     * @param nf output features (the weight's second dimension)
     * @param nx input features (the weight's first dimension)
     * @param std the weights' standard deviation (GPT-2: 0.02, or 0.02 / √(2 · n_layer) for the
     *     projections into the residual stream)
     * @param generator the random source of the weights
     */
    public Conv1D(int nf, int nx, double std, Generator generator) {
        if (nf <= 0 || nx <= 0) {
            throw new IllegalArgumentException("Conv1D: sizes must be positive, got nf=" + nf + ", nx=" + nx);
        }
        this.weight = registerParameter("weight", Init.normal(Tensor.zeros(nx, nf), 0, std, generator));
        this.bias = registerParameter("bias", Tensor.zeros(nf));
    }

    /**
     * @param input float32 [*, nx]
     * @return float32 [*, nf]
     * @throws IllegalArgumentException when input's last size is not nx
     */
    @Override
    public Tensor forward(Tensor input) {
        // Hugging Face's torch.addmm(bias, x, weight): the [nx, nf] weight read in place by the GEMMs
        // (a transposed copy per call cost a copy of every block's weights, kept for backward), the
        // bias seeded into the output, autocast's bf16 GEMM as torch.autocast gives addmm
        return Functional.addmm(bias, input, weight);
    }

    /** The weight [nx, nf]. */
    public Tensor weight() {
        return weight;
    }

    /** The bias [nf]. */
    public Tensor bias() {
        return bias;
    }

    /** E.g. "nf=2304, nx=768", as Hugging Face prints it. */
    @Override
    protected String extraRepr() {
        return "nf=" + weight.size(1) + ", nx=" + weight.size(0);
    }
}
