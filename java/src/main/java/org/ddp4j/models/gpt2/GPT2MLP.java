package org.ddp4j.models.gpt2;

import org.ddp4j.nn.Dropout;
import org.ddp4j.nn.GELU;
import org.ddp4j.nn.Module;
import org.ddp4j.tensor.Generator;
import org.ddp4j.tensor.Tensor;

/**
 * GPT-2's feed-forward layer with Hugging Face's names ({@code GPT2MLP}): {@code c_fc} to n_inner
 * channels, GELU in its tanh form (Hugging Face's "gelu_new"), {@code c_proj} back, dropout.
 */
public class GPT2MLP extends Module {
    private final Conv1D cFc;
    private final GELU act;
    private final Conv1D cProj;
    private final Dropout dropout;

    /** A block's MLP for config, its weights drawn from generator. */
    public GPT2MLP(GPT2Config config, Generator generator) {
        this.cFc = registerModule("c_fc", new Conv1D(config.nInner(), config.nEmbd(), config.initializerRange(), generator));
        this.cProj = registerModule("c_proj", new Conv1D(config.nEmbd(), config.nInner(), GPT2Model.residualStd(config),
                generator));
        this.act = registerModule("act", new GELU("tanh"));
        this.dropout = registerModule("dropout", new Dropout(config.residPdrop(), generator));
    }

    /**
     * @param x float32 [B, T, n_embd]
     * @return float32 [B, T, n_embd]
     */
    @Override
    public Tensor forward(Tensor x) {
        return dropout.forward(cProj.forward(act.forward(cFc.forward(x))));
    }
}
