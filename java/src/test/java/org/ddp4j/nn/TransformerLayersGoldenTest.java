package org.ddp4j.nn;

import static org.ddp4j.testing.Assertions2.assertClose;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.function.Supplier;
import org.ddp4j.nn.functional.Functional;
import org.ddp4j.tensor.Generator;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;
import org.ddp4j.tensor.Threads;
import org.ddp4j.testing.Golden;
import org.ddp4j.testing.GradCheck;
import org.ddp4j.testing.GradLeaves;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Embedding, LayerNorm, GELU, scaled dot-product attention and the large-vocabulary cross entropy
 * against PyTorch (golden/transformer_layers.json), plus thread-count independence and the
 * attention dropout's properties.
 */
class TransformerLayersGoldenTest {
    static final double RTOL = 1e-5;
    static final double ATOL = 1e-5;
    static final Golden G = Golden.load("transformer_layers");

    private final GradLeaves leaves = new GradLeaves();

    private Tensor leaf(Tensor t) {
        return leaves.leaf(t);
    }

    @AfterEach
    void freeGrads() {
        leaves.freeGrads();
    }

    @Test
    void embeddingWithPaddingAndRepeatedIndicesMatchesPyTorch() {
        try (var scope = Tensors.scope()) {
            Tensor w = leaf(G.tensor("emb.weight"));
            Tensor y = Functional.embedding(G.tensor("emb.index"), w, (long) G.number("emb.padding_idx"));
            assertArrayEquals(new long[] {2, 4, 3}, y.shape());
            assertClose(G.tensor("emb.y"), y, 0, 0, "embedding forward");
            y.backward(G.tensor("emb.gy"));
            assertClose(G.tensor("emb.gweight"), w.grad(), RTOL, ATOL, "embedding weight gradient");
        }
    }

    @Test
    void embeddingModuleZeroesThePaddingRowAndNamesBadIndices() {
        try (var scope = Tensors.scope(); Embedding emb = new Embedding(6, 4, -1L, new Generator(3))) {
            assertEquals(5L, emb.paddingIdx());
            float[] w = emb.weight().toFloatArray();
            for (int c = 0; c < 4; c++) {
                assertEquals(0f, w[5 * 4 + c]);
            }
            assertEquals("Embedding(6, 4, padding_idx=5)", emb.toString());
            var e = assertThrows(IllegalArgumentException.class,
                    () -> emb.forward(Tensor.ofLongs(new long[] {0, 6}, 2)));
            assertTrue(e.getMessage().contains("index 6") && e.getMessage().contains("size 6"), e.getMessage());
            assertThrows(IllegalArgumentException.class, () -> new Embedding(6, 4, 6L, new Generator(0)));
        }
    }

    @Test
    void layerNormOverOneAndTwoDimsWithAndWithoutAffineMatchesPyTorch() {
        for (String tag : new String[] {"d1", "d2"}) {
            long[] shape = tag.equals("d1") ? new long[] {5} : new long[] {3, 5};
            try (var scope = Tensors.scope()) {
                Tensor x = leaf(G.tensor("ln.x"));
                Tensor w = leaf(G.tensor("ln." + tag + ".w"));
                Tensor b = leaf(G.tensor("ln." + tag + ".b"));
                Tensor y = Functional.layerNorm(x, shape, w, b, 1e-5);
                assertClose(G.tensor("ln." + tag + ".y"), y, RTOL, ATOL, "layer norm " + tag);
                y.backward(G.tensor("ln.gy"));
                assertClose(G.tensor("ln." + tag + ".gx"), x.grad(), RTOL, ATOL, "layer norm gx " + tag);
                assertClose(G.tensor("ln." + tag + ".gw"), w.grad(), RTOL, ATOL, "layer norm gw " + tag);
                assertClose(G.tensor("ln." + tag + ".gb"), b.grad(), RTOL, ATOL, "layer norm gb " + tag);
            }
            freeGrads();
            try (var scope = Tensors.scope(); LayerNorm ln = new LayerNorm(shape, 1e-5, false)) {
                assertTrue(ln.parameters().isEmpty());
                Tensor x = leaf(G.tensor("ln.x"));
                Tensor y = ln.forward(x);
                assertClose(G.tensor("ln." + tag + ".plain.y"), y, RTOL, ATOL, "layer norm plain " + tag);
                y.backward(G.tensor("ln.gy"));
                assertClose(G.tensor("ln." + tag + ".plain.gx"), x.grad(), RTOL, ATOL, "layer norm plain gx " + tag);
            }
            freeGrads();
        }
    }

    @Test
    void layerNormModuleHasPyTorchsParametersAndRepr() {
        try (LayerNorm ln = new LayerNorm(4)) {
            assertEquals(List.of("weight", "bias"), new ArrayList<>(ln.namedParameters().keySet()));
            assertArrayEquals(new float[] {1, 1, 1, 1}, ln.weight().toFloatArray());
            assertArrayEquals(new float[] {0, 0, 0, 0}, ln.bias().toFloatArray());
            assertEquals("LayerNorm((4,), eps=1e-05, elementwise_affine=True)", ln.toString());
            try (var scope = Tensors.scope()) {
                var e = assertThrows(IllegalArgumentException.class, () -> ln.forward(Tensor.zeros(2, 3)));
                assertTrue(e.getMessage().contains("[2, 3]") && e.getMessage().contains("[4]"), e.getMessage());
            }
        }
    }

    @Test
    void geluBothFormsMatchPyTorch() {
        for (String approximate : new String[] {"none", "tanh"}) {
            try (var scope = Tensors.scope()) {
                Tensor x = leaf(G.tensor("gelu.x"));
                Tensor y = new GELU(approximate).forward(x);
                assertClose(G.tensor("gelu." + approximate + ".y"), y, RTOL, ATOL, "gelu " + approximate);
                y.backward(G.tensor("gelu.gy"));
                assertClose(G.tensor("gelu." + approximate + ".gx"), x.grad(), RTOL, ATOL, "gelu grad " + approximate);
            }
            freeGrads();
        }
        assertEquals("GELU(approximate='tanh')", new GELU("tanh").toString());
        assertThrows(IllegalArgumentException.class, () -> new GELU("fast"));
    }

    static final String[] ATTENTION_CASES = {"t1", "t7", "t7c", "t64", "t64c", "t1000c", "l5s9c", "l9s5c", "l70s130",
        "mask2d", "mask4d", "maskrow"};

    @Test
    void attentionMatchesTheWrittenOutSoftmaxForwardAndBackward() {
        for (String name : ATTENTION_CASES) {
            String p = "att." + name + ".";
            try (var scope = Tensors.scope()) {
                Tensor q = leaf(G.tensor(p + "q"));
                Tensor k = leaf(G.tensor(p + "k"));
                Tensor v = leaf(G.tensor(p + "v"));
                Tensor mask = G.has(p + "mask") ? maskWithNegInf(p) : null;
                boolean causal = (Boolean) G.json(p + "causal");
                Tensor y = mask == null && !name.startsWith("t7")
                        ? Functional.scaledDotProductAttention(q, k, v, causal)
                        : Functional.scaledDotProductAttention(q, k, v, mask, 0.0, causal, null, null);
                assertClose(G.tensor(p + "y"), y, RTOL, ATOL, "attention " + name);
                y.backward(G.tensor(p + "gy"));
                assertClose(G.tensor(p + "gq"), q.grad(), RTOL, ATOL, "attention dq " + name);
                assertClose(G.tensor(p + "gk"), k.grad(), RTOL, ATOL, "attention dk " + name);
                assertClose(G.tensor(p + "gv"), v.grad(), RTOL, ATOL, "attention dv " + name);
            }
            freeGrads();
        }
    }

    /** The case's additive mask with -inf where the file marks it (JSON has no -inf). */
    private static Tensor maskWithNegInf(String p) {
        float[] m = G.floats(p + "mask");
        long[] negInf = G.longs(p + "mask_neg_inf");
        for (int i = 0; i < m.length; i++) {
            if (negInf[i] != 0) {
                m[i] = Float.NEGATIVE_INFINITY;
            }
        }
        return Tensor.of(m, G.shape(p + "mask"));
    }

    @Test
    void attentionRejectsMismatchedShapesNamingThem() {
        try (var scope = Tensors.scope()) {
            var e = assertThrows(IllegalArgumentException.class, () -> Functional.scaledDotProductAttention(
                    Tensor.zeros(2, 3, 4), Tensor.zeros(2, 5, 3), Tensor.zeros(2, 5, 4), false));
            assertTrue(e.getMessage().contains("[2, 5, 3]"), e.getMessage());
            var m = assertThrows(IllegalArgumentException.class, () -> Functional.scaledDotProductAttention(
                    Tensor.zeros(2, 3, 4), Tensor.zeros(2, 5, 4), Tensor.zeros(2, 5, 4), Tensor.zeros(3, 4), 0, false,
                    null, null));
            assertTrue(m.getMessage().contains("attn_mask [3, 4]"), m.getMessage());
        }
    }

    @Test
    void crossEntropyOver50257ClassesWithIgnoreIndexMatchesPyTorch() {
        int n = 4;
        int vocab = 50257;
        float[] logits = new float[n * vocab];
        for (long r = 0; r < n; r++) {
            for (long c = 0; c < vocab; c++) {
                logits[(int) (r * vocab + c)] = ((c * 7919 + r * 104729 + (c * c) % 1031) % 1024) / 64f - 8;
            }
        }
        try (var scope = Tensors.scope()) {
            Tensor x = leaf(Tensor.of(logits, n, vocab));
            Tensor loss = new CrossEntropyLoss((long) G.number("ce.ignore_index")).forward(x, G.tensor("ce.target"));
            assertClose(G.tensor("ce.loss"), loss, RTOL, ATOL, "cross entropy loss");
            loss.backward();
            float[] g = x.grad().toFloatArray();
            long[] cols = G.longs("ce.cols");
            float[] picked = new float[n * cols.length];
            float[] absSum = new float[n];
            for (int r = 0; r < n; r++) {
                for (int j = 0; j < cols.length; j++) {
                    picked[r * cols.length + j] = g[(int) (r * vocab + cols[j])];
                }
                double s = 0;
                for (int c = 0; c < vocab; c++) {
                    s += Math.abs(g[r * vocab + c]);
                }
                absSum[r] = (float) s;
            }
            assertClose(G.floats("ce.grad_cols"), picked, RTOL, 1e-9, "cross entropy gradient columns");
            assertClose(G.floats("ce.grad_abs_sum"), absSum, RTOL, ATOL, "cross entropy gradient |row| sums");
            Tensor allIgnored = Functional.crossEntropy(Tensor.zeros(2, 5), Tensor.ofLongs(new long[] {7, 7}, 2), 7);
            assertTrue(Float.isNaN(allIgnored.item()) && (Boolean) G.json("ce.all_ignored_loss_is_nan"));
            var e = assertThrows(IllegalArgumentException.class,
                    () -> Functional.crossEntropy(Tensor.zeros(2, 5), Tensor.ofLongs(new long[] {1, 5}, 2), -100));
            assertTrue(e.getMessage().contains("target 5") && e.getMessage().contains("5 classes"), e.getMessage());
        }
    }

    // ---- thread counts ------------------------------------------------------------------------------

    /** The flat values that producer gives under 1, 2 and 3 threads, which must be bit-identical. */
    private static void assertSameBitsForThreadCounts(String what, Supplier<List<float[]>> producer) {
        int saved = Threads.getNumThreads();
        try {
            List<float[]> reference = null;
            for (int threads = 1; threads <= 3; threads++) {
                Threads.setNumThreads(threads);
                List<float[]> got = producer.get();
                if (reference == null) {
                    reference = got;
                } else {
                    for (int i = 0; i < got.size(); i++) {
                        assertArrayEquals(reference.get(i), got.get(i), what + " output " + i + " with " + threads + " threads");
                    }
                }
            }
        } finally {
            Threads.setNumThreads(saved);
        }
    }

    private static Tensor randn(Generator g, long... shape) {
        int n = 1;
        for (long s : shape) {
            n *= (int) s;
        }
        return Tensor.of(g.normal(n), shape);
    }

    @Test
    void attentionHeadLayerNormAndEmbeddingBackwardGiveTheSameBitsForOneTwoAndThreeThreads() {
        assertSameBitsForThreadCounts("attention", () -> {
            try (var scope = Tensors.scope()) {
                Generator g = new Generator(11);
                Tensor q = randn(g, 2, 3, 100, 16).requiresGrad(true);
                Tensor k = randn(g, 2, 3, 130, 16).requiresGrad(true);
                Tensor v = randn(g, 2, 3, 130, 8).requiresGrad(true);
                Tensor y = Functional.scaledDotProductAttention(q, k, v, null, 0.2, true, null, new Generator(4));
                y.backward(randn(g, 2, 3, 100, 8));
                List<float[]> out = List.of(y.toFloatArray(), q.grad().toFloatArray(), k.grad().toFloatArray(),
                        v.grad().toFloatArray());
                for (Tensor t : new Tensor[] {q, k, v}) {
                    t.clearGrad();
                }
                return out;
            }
        });
        assertSameBitsForThreadCounts("packed attention", () -> {
            try (var scope = Tensors.scope()) {
                Generator g = new Generator(14);
                Tensor qkv = randn(g, 2, 150, 3 * 24).requiresGrad(true);
                Tensor y = Functional.multiHeadAttentionPacked(qkv, 3, 0.2, true, null, new Generator(5));
                y.backward(randn(g, 2, 150, 24));
                List<float[]> out = List.of(y.toFloatArray(), qkv.grad().toFloatArray());
                qkv.clearGrad();
                return out;
            }
        });
        assertSameBitsForThreadCounts("head and cross entropy", () -> {
            try (var scope = Tensors.scope()) {
                Generator g = new Generator(15);
                Tensor h = randn(g, 300, 32).requiresGrad(true);
                Tensor w = randn(g, 999, 32).requiresGrad(true);
                long[] t = new long[300];
                for (int i = 0; i < t.length; i++) {
                    t[i] = g.nextInt(999);
                }
                Tensor loss = Functional.linearCrossEntropy(h, w, Tensor.ofLongs(t, 300), -100);
                loss.backward();
                List<float[]> out = List.of(new float[] {loss.item()}, h.grad().toFloatArray(), w.grad().toFloatArray());
                h.clearGrad();
                w.clearGrad();
                return out;
            }
        });
        assertSameBitsForThreadCounts("layer norm", () -> {
            try (var scope = Tensors.scope()) {
                Generator g = new Generator(12);
                Tensor x = randn(g, 300, 257).requiresGrad(true);
                Tensor w = randn(g, 257).requiresGrad(true);
                Tensor b = randn(g, 257).requiresGrad(true);
                Tensor y = Functional.layerNorm(x, new long[] {257}, w, b, 1e-5);
                y.backward(randn(g, 300, 257));
                List<float[]> out = List.of(y.toFloatArray(), x.grad().toFloatArray(), w.grad().toFloatArray(),
                        b.grad().toFloatArray());
                for (Tensor t : new Tensor[] {x, w, b}) {
                    t.clearGrad();
                }
                return out;
            }
        });
        assertSameBitsForThreadCounts("embedding backward", () -> {
            try (var scope = Tensors.scope()) {
                Generator g = new Generator(13);
                Tensor w = randn(g, 50, 96).requiresGrad(true);
                long[] idx = new long[4000];
                for (int i = 0; i < idx.length; i++) {
                    idx[i] = g.nextInt(50);
                }
                Tensor y = Functional.embedding(Tensor.ofLongs(idx, 40, 100), w, 3L);
                y.backward(randn(g, 40, 100, 96));
                List<float[]> out = List.of(w.grad().toFloatArray());
                w.clearGrad();
                return out;
            }
        });
    }

    // ---- attention dropout ----------------------------------------------------------------------------

    @Test
    void attentionDropoutZeroIsBitForBitNoDropout() {
        try (var scope = Tensors.scope()) {
            Generator g = new Generator(21);
            Tensor q = randn(g, 2, 40, 8);
            Tensor k = randn(g, 2, 50, 8);
            Tensor v = randn(g, 2, 50, 8);
            Tensor plain = Functional.scaledDotProductAttention(q, k, v, true);
            Tensor zero = Functional.scaledDotProductAttention(q, k, v, null, 0.0, true, null, new Generator(1));
            assertArrayEquals(plain.toFloatArray(), zero.toFloatArray());
        }
    }

    @Test
    void attentionDropoutGradientMatchesFiniteDifferencesForAFixedSeed() {
        try (var scope = Tensors.scope()) {
            Generator g = new Generator(22);
            Tensor q = randn(g, 2, 9, 4).requiresGrad(true);
            Tensor k = randn(g, 2, 11, 4).requiresGrad(true);
            Tensor v = randn(g, 2, 11, 3).requiresGrad(true);
            Tensor mask = randn(g, 9, 11);
            for (Tensor input : new Tensor[] {q, k, v}) {
                GradCheck.check(x -> Functional.scaledDotProductAttention(q, k, v, mask, 0.3, false, 0.7, new Generator(5)),
                        input, 1e-2, 2e-2, 2e-3, 200, "attention with dropout");
                input.clearGrad();
            }
        }
    }

    @Test
    void attentionDropoutKeepsAboutOneMinusPOfTheWeights() {
        try (var scope = Tensors.scope()) {
            double p = 0.3;
            // q = k = 0: every weight is 1/S, so with v = 1 each output is (kept fraction of its row) / (1 - p).
            Tensor q = Tensor.zeros(4, 256, 8);
            Tensor k = Tensor.zeros(4, 256, 8);
            Tensor v = Tensor.ones(4, 256, 1);
            float[] y = Functional.scaledDotProductAttention(q, k, v, null, p, false, null, new Generator(9)).toFloatArray();
            double mean = 0;
            for (float f : y) {
                mean += f;
            }
            mean /= y.length;
            assertEquals(1 - p, mean * (1 - p), 0.005, "fraction of attention weights kept");
            float[] again = Functional.scaledDotProductAttention(q, k, v, null, p, false, null, new Generator(9)).toFloatArray();
            assertArrayEquals(y, again, "the same generator state gives the same mask");
        }
    }

    @Test
    void linearOnLeadingDimsEqualsTheFlattenedProductWithGradientsOfTheInputsShape() {
        try (var scope = Tensors.scope(); Linear lin = new Linear(4, 3, true, new Generator(8))) {
            Generator g = new Generator(30);
            float[] xs = g.normal(2 * 5 * 4);
            Tensor x3 = leaf(Tensor.of(xs, 2, 5, 4));
            Tensor y3 = lin.forward(x3);
            assertArrayEquals(new long[] {2, 5, 3}, y3.shape());
            Tensor y2 = lin.forward(Tensor.of(xs, 10, 4));
            assertArrayEquals(y2.toFloatArray(), y3.toFloatArray());
            y3.sum().backward();
            assertArrayEquals(new long[] {2, 5, 4}, x3.grad().shape());
            lin.zeroGrad(true);
        }
    }

    @Test
    void moduleListNamesItsChildrenByIndex() {
        try (ModuleList<Linear> blocks = new ModuleList<>(new Linear(2, 2), new Linear(2, 3))) {
            blocks.add(new Linear(3, 1, false));
            assertEquals(3, blocks.size());
            assertEquals(3, blocks.get(-1).inFeatures());
            assertEquals(List.of("0.weight", "0.bias", "1.weight", "1.bias", "2.weight"),
                    new ArrayList<>(blocks.namedParameters().keySet()));
            int n = 0;
            for (Linear l : blocks) {
                assertEquals(blocks.get(n++), l);
            }
            assertThrows(IndexOutOfBoundsException.class, () -> blocks.get(3));
        }
    }
}
