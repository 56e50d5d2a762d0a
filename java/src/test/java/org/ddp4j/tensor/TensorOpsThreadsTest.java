package org.ddp4j.tensor;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * The transformer tensor ops give the same bits with 1, 2 and 3 intra-op threads, forward and
 * backward, at sizes that split their work (several grains, GEMMs cut into blocks).
 */
class TensorOpsThreadsTest {

    private static Tensor random(Random rng, long... shape) {
        long n = 1;
        for (long s : shape) {
            n *= s;
        }
        float[] data = new float[Math.toIntExact(n)];
        for (int i = 0; i < data.length; i++) {
            data[i] = (float) rng.nextGaussian();
        }
        return Tensor.of(data, shape).requiresGrad(true);
    }

    private static Tensor randomIndex(Random rng, int bound, long... shape) {
        long n = 1;
        for (long s : shape) {
            n *= s;
        }
        long[] data = new long[Math.toIntExact(n)];
        for (int i = 0; i < data.length; i++) {
            data[i] = rng.nextInt(bound);
        }
        return Tensor.ofLongs(data, shape);
    }

    /** Runs every op forward and backward (a weighted sum of the outputs) and returns outputs and gradients as bits. */
    private static List<int[]> run() {
        List<int[]> bits = new ArrayList<>();
        Random rng = new Random(7);
        try (var scope = Tensors.scope()) {
            Tensor a = random(rng, 4, 160, 96);
            Tensor w = random(rng, 96, 200);
            Tensor p = random(rng, 3, 1, 150, 64);
            Tensor q = random(rng, 2, 64, 140);
            Tensor s = random(rng, 300, 257);
            Tensor cube = random(rng, 40, 50, 60);
            Tensor left = random(rng, 64, 1, 300);
            Tensor right = random(rng, 100, 1);
            Tensor emb = random(rng, 1000, 64);
            Tensor ids = randomIndex(rng, 1000, 5000);
            Tensor table = random(rng, 400, 300);
            Tensor where = randomIndex(rng, 300, 400, 500);
            Tensor scores = random(rng, 8, 4, 64, 64);
            Tensor causal = Tensor.ones(DType.BOOL, 64, 64).tril(0).logicalNot();
            List<Tensor> outs = new ArrayList<>();
            outs.add(a.matmul(w));
            outs.add(p.matmul(q));
            outs.add(s.softmax(-1));
            outs.add(s.logSoftmax(0));
            outs.add(cube.sum(new int[] {0, 2}, false));
            outs.add(cube.mean(1, true));
            outs.add(cube.amax(-1, false));
            outs.add(cube.permute(2, 0, 1));
            outs.add(left.add(right).tanh());
            outs.add(left.div(right.exp()));
            outs.add(emb.indexSelect(0, ids));
            outs.add(table.gather(1, where));
            outs.add(scores.maskedFill(causal, Double.NEGATIVE_INFINITY).softmax(-1));
            outs.add(Tensor.cat(s.split(100, 0), 1));
            Tensor loss = null;
            for (Tensor o : outs) {
                bits.add(bitsOf(o));
                Tensor term = o.mul(random(rng, o.shape()).detach()).sum();
                loss = loss == null ? term : loss.add(term);
            }
            loss.backward();
            for (Tensor leaf : new Tensor[] {a, w, p, q, s, cube, left, right, emb, table, scores}) {
                bits.add(bitsOf(leaf.grad()));
                leaf.clearGrad();
            }
        }
        return bits;
    }

    private static int[] bitsOf(Tensor t) {
        float[] values = t.toFloatArray();
        int[] out = new int[values.length];
        for (int i = 0; i < values.length; i++) {
            out[i] = Float.floatToRawIntBits(values[i]);
        }
        return out;
    }

    @Test
    void sameBitsForOneTwoAndThreeThreads() {
        int before = Threads.getNumThreads();
        try {
            Threads.setNumThreads(1);
            List<int[]> one = run();
            for (int n : new int[] {2, 3}) {
                Threads.setNumThreads(n);
                List<int[]> other = run();
                assertEquals(one.size(), other.size());
                for (int i = 0; i < one.size(); i++) {
                    assertArrayEquals(one.get(i), other.get(i), "tensor " + i + " with " + n + " threads");
                }
            }
        } finally {
            Threads.setNumThreads(before);
        }
    }
}
