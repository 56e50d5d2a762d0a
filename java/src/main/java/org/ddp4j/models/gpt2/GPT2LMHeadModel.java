package org.ddp4j.models.gpt2;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.ddp4j.nn.Linear;
import org.ddp4j.nn.Module;
import org.ddp4j.nn.functional.Functional;
import org.ddp4j.tensor.Generator;
import org.ddp4j.tensor.Tensor;

/**
 * GPT-2 with its language-model head, Hugging Face's {@code GPT2LMHeadModel}: {@code transformer}
 * (a {@link GPT2Model}) and {@code lm_head}, a bias-free projection to the vocabulary whose weight
 * is the token embedding's (tied: one parameter, listed once, its gradient the sum of both uses,
 * saved under both names). Parameter names and layouts are Hugging Face's, so its
 * {@code model.safetensors} loads ({@link GPT2Pretrained}).
 *
 * <p>Example: {@code var model = new GPT2LMHeadModel(GPT2Config.gpt2(), new Generator(1337));
 * Tensor loss = model.loss(x, y); loss.backward();}
 */
public class GPT2LMHeadModel extends Module {
    /** Hugging Face's label that the loss skips ({@code -100}, PyTorch's cross-entropy default). */
    public static final long IGNORE_INDEX = -100;

    private final GPT2Model transformer;
    private final Linear lmHead;

    /** A model for config with Hugging Face's initialisation, drawn from generator. */
    public GPT2LMHeadModel(GPT2Config config, Generator generator) {
        this.transformer = registerModule("transformer", new GPT2Model(config, generator));
        // tie_weights(): the head's weight is the token embedding's [vocab, n_embd] parameter; the
        // Linear's own initial weight (drawn from a generator of its own) is dropped at once
        this.lmHead = registerModule("lm_head", new Linear(config.nEmbd(), config.vocabSize(), false, new Generator(0)));
        lmHead.weight().close();
        lmHead.setParameter("weight", transformer.wte().weight());
    }

    /**
     * The next-token logits.
     *
     * @param inputIds int64 [B, T]
     * @return float32 [B, T, vocab_size]
     * @throws IllegalArgumentException as {@link GPT2Model#forward}
     */
    @Override
    public Tensor forward(Tensor inputIds) {
        return lmHead.forward(transformer.forward(inputIds));
    }

    /**
     * The mean cross-entropy of the next-token logits against targets, as nanoGPT's
     * {@code model(x, y)} gives it, with the head and the loss fused
     * ({@link Functional#linearCrossEntropy}): the [B·T, vocab] logits and their gradient never
     * exist (on GPT-2 124M at B·T = 1024, 2 × 206 MB). Unlike Hugging Face's {@code labels},
     * targets are already shifted: targets[b, t] is the token after inputIds[b, t]. Under DDP, run
     * it through {@code ddp.call(() -> model.loss(x, y))}.
     *
     * @param inputIds int64 [B, T]
     * @param targets int64 [B, T]; {@link #IGNORE_INDEX} where no loss is wanted
     * @return a float32 scalar (NaN when every target is ignored)
     * @throws IllegalArgumentException on shapes that do not match or a target outside the vocabulary
     */
    public Tensor loss(Tensor inputIds, Tensor targets) {
        Tensor h = transformer.forward(inputIds);
        return Functional.linearCrossEntropy(h.view(-1, h.size(2)), lmHead.weight(), targets.view(-1), IGNORE_INDEX);
    }

    /**
     * Parameter groups for AdamW as nanoGPT's {@code configure_optimizers}: weight decay on the
     * matrices and embeddings (every parameter of 2 or more dimensions), none on biases and layer
     * norms. Pass them to {@code new AdamW(groups, options)}.
     *
     * @param weightDecay the decay of the first group, e.g. 0.1
     * @return two groups, {@code params} and {@code weight_decay} each, in parameter order
     */
    public List<Map<String, Object>> parameterGroups(double weightDecay) {
        return parameterGroups(parameters(), weightDecay);
    }

    /**
     * {@link #parameterGroups(double)} over any list of parameters: e.g. fully_shard's shards of this
     * model ({@code fsdp.parameters()}), which keep their parameters' dimensions.
     */
    public static List<Map<String, Object>> parameterGroups(List<Tensor> parameters, double weightDecay) {
        List<Tensor> decay = new ArrayList<>();
        List<Tensor> noDecay = new ArrayList<>();
        for (Tensor p : parameters) {
            (p.dim() >= 2 ? decay : noDecay).add(p);
        }
        return List.of(Map.of("params", decay, "weight_decay", weightDecay), Map.of("params", noDecay, "weight_decay", 0.0));
    }

    /** The head ({@code lm_head}), a Linear whose weight is {@code transformer.wte.weight}. */
    public Linear lmHead() {
        return lmHead;
    }

    /** The transformer ({@code transformer.*}). */
    public GPT2Model transformer() {
        return transformer;
    }

    /** The configuration this model was built for. */
    public GPT2Config config() {
        return transformer.config();
    }

    /**
     * Loads a Hugging Face checkpoint strictly, as {@code GPT2LMHeadModel.from_pretrained}: see
     * {@link GPT2Pretrained#load(Path)}.
     */
    public static GPT2LMHeadModel fromPretrained(Path path) {
        return GPT2Pretrained.load(path);
    }

    /**
     * Appends maxNewTokens tokens to each row of inputIds, each drawn from the softmax of the last
     * logits divided by temperature, among the topK likeliest when topK is positive; the context
     * is cropped to the last n_positions tokens. Runs without gradients, in eval mode, and restores
     * the mode. Mirrors nanoGPT's {@code generate} (Hugging Face: {@code generate(do_sample=True,
     * temperature, top_k)}).
     *
     * @param inputIds int64 [B, T], T ≥ 1
     * @param maxNewTokens tokens to add, ≥ 0
     * @param temperature > 0; lower is greedier
     * @param topK keep only the k likeliest tokens; 0 keeps all
     * @param generator the source of the draws (same seed, same text)
     * @return int64 [B, T + maxNewTokens]
     * @throws IllegalArgumentException on a bad argument
     */
    public Tensor generate(Tensor inputIds, int maxNewTokens, double temperature, int topK, Generator generator) {
        return Sampling.generate(this, inputIds, maxNewTokens, temperature, topK, generator);
    }
}
