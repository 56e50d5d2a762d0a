package org.ddp4j.models.gpt2;

import org.ddp4j.nn.Dropout;
import org.ddp4j.nn.Module;
import org.ddp4j.nn.functional.Functional;
import org.ddp4j.tensor.Generator;
import org.ddp4j.tensor.Tensor;

/**
 * GPT-2's causal self-attention with Hugging Face's names ({@code GPT2Attention}): {@code c_attn}
 * projects to queries, keys and values at once, the heads attend through the fused
 * {@link Functional#scaledDotProductAttention} (causal, no T × T matrix kept), and {@code c_proj}
 * projects back, followed by {@code resid_dropout}.
 */
public class GPT2Attention extends Module {
    private final int nHead;
    private final double attnPdrop;
    private final Generator generator;
    private final Conv1D cAttn;
    private final Conv1D cProj;
    private final Dropout residDropout;

    /** A block's attention for config, its weights drawn from generator. */
    public GPT2Attention(GPT2Config config, Generator generator) {
        int nEmbd = config.nEmbd();
        this.nHead = config.nHead();
        this.attnPdrop = config.attnPdrop();
        this.generator = generator;
        double std = config.initializerRange();
        this.cAttn = registerModule("c_attn", new Conv1D(3 * nEmbd, nEmbd, std, generator));
        this.cProj = registerModule("c_proj", new Conv1D(nEmbd, nEmbd, GPT2Model.residualStd(config), generator));
        // attn_dropout works inside the fused kernel; this module holds only the resid_dropout layer
        this.residDropout = registerModule("resid_dropout", new Dropout(config.residPdrop(), generator));
    }

    /**
     * @param x float32 [B, T, n_embd]
     * @return float32 [B, T, n_embd]
     */
    @Override
    public Tensor forward(Tensor x) {
        // q, k, v split into heads and the heads merged back, read and written in place in c_attn's
        // [B, T, 3·C] output: Hugging Face's split / view / transpose without their copies
        Tensor y = Functional.multiHeadAttentionPacked(cAttn.forward(x), nHead, isTraining() ? attnPdrop : 0, true, null,
                generator);
        return residDropout.forward(cProj.forward(y));
    }
}
