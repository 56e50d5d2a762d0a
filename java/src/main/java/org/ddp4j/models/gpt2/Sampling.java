package org.ddp4j.models.gpt2;

import java.util.Arrays;
import org.ddp4j.tensor.DType;
import org.ddp4j.tensor.Generator;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;

/** Autoregressive sampling for {@link GPT2LMHeadModel#generate}: temperature and top-k over the last logits. */
final class Sampling {
    private Sampling() {}

    static Tensor generate(GPT2LMHeadModel model, Tensor inputIds, int maxNewTokens, double temperature, int topK,
            Generator generator) {
        if (inputIds.dim() != 2 || inputIds.dtype() != DType.INT64 || inputIds.size(1) < 1) {
            throw new IllegalArgumentException("generate takes int64 token ids [batch, sequence] with at least one token,"
                    + " got " + inputIds.describe());
        }
        if (maxNewTokens < 0 || !(temperature > 0) || topK < 0) {
            throw new IllegalArgumentException("generate: maxNewTokens must be >= 0, temperature > 0 and topK >= 0 (0: all"
                    + " tokens), got " + maxNewTokens + ", " + temperature + ", " + topK);
        }
        int batch = Math.toIntExact(inputIds.size(0));
        int start = Math.toIntExact(inputIds.size(1));
        int total = start + maxNewTokens;
        int context = model.config().nPositions();
        long[][] rows = new long[batch][total];
        long[] given = inputIds.toLongArray();
        for (int b = 0; b < batch; b++) {
            System.arraycopy(given, b * start, rows[b], 0, start);
        }
        boolean wasTraining = model.isTraining();
        model.eval();
        try (var noGrad = Tensors.noGrad()) {
            for (int t = start; t < total; t++) {
                int from = Math.max(0, t - context);
                int len = t - from;
                long[] window = new long[batch * len];
                for (int b = 0; b < batch; b++) {
                    System.arraycopy(rows[b], from, window, b * len, len);
                }
                try (var scope = Tensors.scope()) {
                    // only the last position goes through the head: [B, 1, n_embd] -> [B, 1, V]
                    Tensor hidden = model.transformer().forward(Tensor.ofLongs(window, batch, len));
                    Tensor last = len == 1 ? hidden : hidden.split(new long[] {len - 1, 1}, 1).get(1);
                    float[] logits = model.lmHead().forward(last).toFloatArray();
                    int v = logits.length / batch;
                    for (int b = 0; b < batch; b++) {
                        rows[b][t] = draw(Arrays.copyOfRange(logits, b * v, (b + 1) * v), temperature, topK, generator);
                    }
                }
            }
        } finally {
            model.train(wasTraining);
        }
        long[] out = new long[batch * total];
        for (int b = 0; b < batch; b++) {
            System.arraycopy(rows[b], 0, out, b * total, total);
        }
        return Tensor.ofLongs(out, batch, total);
    }

    /** One token from softmax(logits / temperature), restricted to the topK largest logits when topK > 0. */
    static int draw(float[] logits, double temperature, int topK, Generator generator) {
        double cut = Double.NEGATIVE_INFINITY;
        if (topK > 0 && topK < logits.length) {
            float[] sorted = logits.clone();
            Arrays.sort(sorted);
            cut = sorted[sorted.length - topK]; // ties with the k-th keep it, as torch.topk + masking below it
        }
        double max = Double.NEGATIVE_INFINITY;
        for (float l : logits) {
            max = Math.max(max, l);
        }
        double[] weights = new double[logits.length];
        double sum = 0;
        for (int i = 0; i < logits.length; i++) {
            weights[i] = logits[i] < cut ? 0 : Math.exp((logits[i] - max) / temperature);
            sum += weights[i];
        }
        double u = generator.uniform(0f, 1f) * sum;
        for (int i = 0; i < weights.length; i++) {
            u -= weights[i];
            if (u < 0) {
                return i;
            }
        }
        for (int i = weights.length - 1; i >= 0; i--) { // rounding left u at or just above 0
            if (weights[i] > 0) {
                return i;
            }
        }
        throw new IllegalStateException("no token to draw: the logits hold no finite value");
    }
}
