package org.ddp4j.models.gpt2;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Arrays;
import org.ddp4j.tensor.Generator;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;
import org.junit.jupiter.api.Test;

/** GPT2LMHeadModel.generate: top-1 is greedy decoding, draws follow the seed, the context is cropped. */
class GPT2GenerateTest {
    private static final GPT2Config CONFIG = new GPT2Config(50, 8, 16, 1, 2, 64, 0.1, 0.1, 0.1, 1e-5, 0.02);

    @Test
    void topOneIsTheArgmaxOfEachStepsLogits() {
        try (GPT2LMHeadModel model = new GPT2LMHeadModel(CONFIG, new Generator(3)); var scope = Tensors.scope()) {
            long[] out = model.generate(Tensor.ofLongs(new long[] {4, 9, 1}, 1, 3), 10, 1.0, 1, new Generator(0)).toLongArray();
            assertEquals(13, out.length);
            model.eval();
            for (int t = 3; t < out.length; t++) {
                int from = Math.max(0, t - CONFIG.nPositions()); // the context window, as generate crops it
                long[] context = Arrays.copyOfRange(out, from, t);
                float[] logits = model.forward(Tensor.ofLongs(context, 1, context.length)).toFloatArray();
                int best = 0;
                for (int v = 0; v < CONFIG.vocabSize(); v++) {
                    int at = (context.length - 1) * CONFIG.vocabSize() + v;
                    best = logits[at] > logits[(context.length - 1) * CONFIG.vocabSize() + best] ? v : best;
                }
                assertEquals(best, out[t], "token " + t);
            }
        }
    }

    @Test
    void theSameSeedDrawsTheSameTextAndTheModeIsRestored() {
        try (GPT2LMHeadModel model = new GPT2LMHeadModel(CONFIG, new Generator(3)); var scope = Tensors.scope()) {
            Tensor prompt = Tensor.ofLongs(new long[] {1, 2, 3, 4}, 2, 2);
            long[] a = model.generate(prompt, 6, 0.8, 10, new Generator(11)).toLongArray();
            long[] b = model.generate(prompt, 6, 0.8, 10, new Generator(11)).toLongArray();
            assertArrayEquals(a, b);
            assertArrayEquals(new long[] {1, 2}, Arrays.copyOfRange(a, 0, 2), "the prompt comes first");
            assertTrue(model.isTraining(), "generate restores training mode");
            assertThrows(IllegalArgumentException.class, () -> model.generate(prompt, 1, 0, 0, new Generator(1)));
        }
    }
}
