package org.ddp4j.models.gpt2;

import org.ddp4j.nn.Dropout;
import org.ddp4j.nn.Embedding;
import org.ddp4j.nn.Init;
import org.ddp4j.nn.LayerNorm;
import org.ddp4j.nn.Module;
import org.ddp4j.nn.ModuleList;
import org.ddp4j.tensor.DType;
import org.ddp4j.tensor.Generator;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;

/**
 * GPT-2's transformer without its head, with Hugging Face's names ({@code GPT2Model}, the
 * {@code transformer.} of a GPT2LMHeadModel): token embedding {@code wte}, position embedding
 * {@code wpe}, dropout {@code drop}, blocks {@code h.0 ... h.(n_layer-1)} and the final layer norm
 * {@code ln_f}.
 */
public class GPT2Model extends Module {
    private final GPT2Config config;
    private final Embedding wte;
    private final Embedding wpe;
    private final Dropout drop;
    private final ModuleList<GPT2Block> h;
    private final LayerNorm lnF;

    /**
     * A model for config with Hugging Face's initialisation drawn from generator: embeddings and
     * weights N(0, 0.02²), the projections into the residual stream N(0, (0.02 / √(2 · n_layer))²),
     * biases 0, layer norms 1 and 0.
     */
    public GPT2Model(GPT2Config config, Generator generator) {
        this.config = config;
        this.wte = registerModule("wte", new Embedding(config.vocabSize(), config.nEmbd(), generator));
        this.wpe = registerModule("wpe", new Embedding(config.nPositions(), config.nEmbd(), generator));
        Init.normal(wte.weight(), 0, config.initializerRange(), generator);
        Init.normal(wpe.weight(), 0, config.initializerRange(), generator);
        this.drop = registerModule("drop", new Dropout(config.embdPdrop(), generator));
        this.h = registerModule("h", new ModuleList<>());
        for (int i = 0; i < config.nLayer(); i++) {
            h.add(new GPT2Block(config, generator));
        }
        this.lnF = registerModule("ln_f", new LayerNorm(new long[] {config.nEmbd()}, config.layerNormEpsilon(), true));
    }

    /** The std of the projections into the residual stream: initializer_range / √(2 · n_layer), as GPT-2's paper. */
    static double residualStd(GPT2Config config) {
        return config.initializerRange() / Math.sqrt(2.0 * config.nLayer());
    }

    /**
     * The last hidden states.
     *
     * @param inputIds int64 [B, T] token ids in [0, vocab_size), T at most n_positions
     * @return float32 [B, T, n_embd]
     * @throws IllegalArgumentException on another shape or dtype, T above n_positions, or an id out of range
     */
    @Override
    public Tensor forward(Tensor inputIds) {
        if (inputIds.dim() != 2 || inputIds.dtype() != DType.INT64) {
            throw new IllegalArgumentException("GPT-2 takes int64 token ids [batch, sequence], got " + inputIds.describe());
        }
        long t = inputIds.size(1);
        if (t > config.nPositions()) {
            throw new IllegalArgumentException("sequence of " + t + " tokens is longer than n_positions="
                    + config.nPositions() + ": crop the input to the last " + config.nPositions() + " tokens");
        }
        Tensor x = wte.forward(inputIds).add(wpe.forward(Tensors.arange(t)));
        x = drop.forward(x);
        for (GPT2Block block : h) {
            x = block.forward(x);
        }
        return lnF.forward(x);
    }

    /** The configuration this model was built for. */
    public GPT2Config config() {
        return config;
    }

    /** The token embedding (its weight is also the head's, tied). */
    public Embedding wte() {
        return wte;
    }

    /** The transformer blocks ({@code transformer.h}), e.g. to apply fully_shard to each. */
    public ModuleList<GPT2Block> h() {
        return h;
    }

    /** The position embedding. */
    public Embedding wpe() {
        return wpe;
    }
}
