package org.ddp4j.models.gpt2;

import org.ddp4j.nn.LayerNorm;
import org.ddp4j.nn.Module;
import org.ddp4j.tensor.Generator;
import org.ddp4j.tensor.Tensor;

/**
 * One pre-norm transformer block with Hugging Face's names ({@code GPT2Block}):
 * {@code x + attn(ln_1(x))}, then {@code x + mlp(ln_2(x))}.
 */
public class GPT2Block extends Module {
    private final LayerNorm ln1;
    private final GPT2Attention attn;
    private final LayerNorm ln2;
    private final GPT2MLP mlp;

    /** A block for config, its weights drawn from generator (attention's, then the MLP's). */
    public GPT2Block(GPT2Config config, Generator generator) {
        long[] width = {config.nEmbd()};
        this.ln1 = registerModule("ln_1", new LayerNorm(width, config.layerNormEpsilon(), true));
        this.attn = registerModule("attn", new GPT2Attention(config, generator));
        this.ln2 = registerModule("ln_2", new LayerNorm(width, config.layerNormEpsilon(), true));
        this.mlp = registerModule("mlp", new GPT2MLP(config, generator));
    }

    /**
     * @param x float32 [B, T, n_embd]
     * @return float32 [B, T, n_embd]
     */
    @Override
    public Tensor forward(Tensor x) {
        Tensor h = x.add(attn.forward(ln1.forward(x)));
        return h.add(mlp.forward(ln2.forward(h)));
    }
}
