package org.ddp4j.nn.parallel;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.ddp4j.distributed.ProcessGroup;
import org.ddp4j.distributed.ProcessGroupGloo;
import org.ddp4j.distributed.store.HashStore;
import org.ddp4j.nn.Linear;
import org.ddp4j.nn.MSELoss;
import org.ddp4j.nn.Module;
import org.ddp4j.tensor.Generator;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;
import org.ddp4j.testing.Ranks;
import org.junit.jupiter.api.Test;

/**
 * Accumulated gradients against one batch of all the window's samples: equal up to float32
 * rounding, including a shorter last window and a smaller last batch, alone and under DDP.
 */
class GradientAccumulationTest {
    private static final int IN = 5;
    private static final int OUT = 3;
    private static final Duration TIMEOUT = Duration.ofSeconds(30);

    /** Samples [from, from + n) of a fixed data set (seeded by salt): x [n, IN], y [n, OUT]. */
    private static Tensor[] samples(int salt, int from, int n) {
        float[] x = new Generator(100 + salt).uniform(64 * IN, -1f, 1f);
        float[] y = new Generator(200 + salt).uniform(64 * OUT, -1f, 1f);
        return new Tensor[] {Tensor.ofRegion(x, from * IN, n, IN), Tensor.ofRegion(y, from * OUT, n, OUT)};
    }

    private static List<Tensor[]> microBatches(int salt, int... sizes) {
        List<Tensor[]> out = new ArrayList<>();
        int from = 0;
        for (int n : sizes) {
            out.add(samples(salt, from, n));
            from += n;
        }
        return out;
    }

    private static float[][] grads(Module m) {
        List<Tensor> ps = m.parameters();
        float[][] g = new float[ps.size()][];
        for (int i = 0; i < g.length; i++) {
            g[i] = ps.get(i).grad().toFloatArray();
        }
        return g;
    }

    /** Gradients of one backward of the mean loss over samples [from, from + n). */
    private static float[][] fullBatchGrads(int salt, int from, int n) {
        try (Linear model = new Linear(IN, OUT, true, new Generator(0)); var scope = Tensors.scope()) {
            Tensor[] b = samples(salt, from, n);
            new MSELoss().forward(model.forward(b[0]), b[1]).backward();
            return grads(model);
        }
    }

    private static void assertClose(float[][] expected, float[][] actual, String what) {
        assertEquals(expected.length, actual.length);
        for (int i = 0; i < expected.length; i++) {
            for (int j = 0; j < expected[i].length; j++) {
                assertEquals(expected[i][j], actual[i][j], 1e-6, what + ": parameter " + i + " element " + j);
            }
        }
    }

    /** Runs the micro-batches through an accumulation; returns the gradients at each window's end (then zeroed). */
    private static List<float[][]> accumulate(Module model, Module net, int steps, List<Tensor[]> batches) {
        List<float[][]> atSync = new ArrayList<>();
        var accumulation = new GradientAccumulation(model, steps);
        for (var micro : accumulation.over(batches, b -> Math.toIntExact(b[0].size(0)))) {
            try (micro; var scope = Tensors.scope()) {
                micro.backward(new MSELoss().forward(model.forward(micro.batch()[0]), micro.batch()[1]));
                if (micro.syncs()) {
                    atSync.add(grads(net));
                    net.parameters().forEach(p -> p.setGrad(null));
                }
            }
        }
        return atSync;
    }

    @Test
    void aWindowOfMicroBatchesGivesTheGradientOfOneBatchOfAllItsSamples() {
        try (Linear model = new Linear(IN, OUT, true, new Generator(0))) {
            // windows of 3: [4, 4, 4] then a shorter last window [4, 2] (a smaller last batch too)
            List<float[][]> got = accumulate(model, model, 3, microBatches(0, 4, 4, 4, 4, 2));
            assertEquals(2, got.size());
            assertClose(fullBatchGrads(0, 0, 12), got.get(0), "first window");
            assertClose(fullBatchGrads(0, 12, 6), got.get(1), "shorter last window");
        }
    }

    @Test
    void oneStepPerMicroBatchIsOrdinaryTraining() {
        try (Linear model = new Linear(IN, OUT, true, new Generator(0))) {
            List<float[][]> got = accumulate(model, model, 1, microBatches(1, 3, 5));
            assertClose(fullBatchGrads(1, 0, 3), got.get(0), "batch 0");
            assertClose(fullBatchGrads(1, 3, 5), got.get(1), "batch 1");
        }
    }

    @Test
    void underDdpTheRanksSynchroniseOnlyOnEachWindowsLastMicroBatch() throws Exception {
        HashStore store = new HashStore(TIMEOUT);
        List<Ranks.Outcome<float[][][]>> outcomes = Ranks.collect(2, rank -> {
            try (ProcessGroup group = new ProcessGroupGloo(store, rank, 2, TIMEOUT);
                    DistributedDataParallel ddp = new DistributedDataParallel(new Linear(IN, OUT, true,
                            new Generator(0)), group, DistributedDataParallel.DEFAULT_BUCKET_CAP_BYTES)) {
                Module net = ddp.module();
                float[][] afterFirst = null;
                float[][] atSync = null;
                var accumulation = new GradientAccumulation(ddp, 3);
                // each rank its own data; one window [3, 3, 1] (an uneven last batch)
                for (var micro : accumulation.over(microBatches(rank, 3, 3, 1), b -> Math.toIntExact(b[0].size(0)))) {
                    try (micro; var scope = Tensors.scope()) {
                        micro.backward(new MSELoss().forward(ddp.forward(micro.batch()[0]), micro.batch()[1]));
                        if (micro.index() == 0) {
                            afterFirst = grads(net);
                        }
                        if (micro.syncs()) {
                            atSync = grads(net);
                        }
                    }
                }
                return new float[][][] {afterFirst, atSync};
            }
        });
        float[][][] r0 = outcomes.get(0).value();
        float[][][] r1 = outcomes.get(1).value();
        assertTrue(outcomes.get(0).error() == null && outcomes.get(1).error() == null, "a rank failed: "
                + outcomes.get(0).error() + " / " + outcomes.get(1).error());
        // local after the first micro-batch (not synchronised), each rank its own gradient
        assertClose(scaled(fullBatchGrads(0, 0, 3), 3f / 9), r0[0], "rank 0 after micro-batch 0");
        assertFalse(java.util.Arrays.equals(r0[0][0], r1[0][0]), "the first micro-batch was synchronised");
        // at the window's end: the mean over ranks of each rank's mean over its 7 samples
        float[][] expected = mean(fullBatchGrads(0, 0, 7), fullBatchGrads(1, 0, 7));
        assertClose(expected, r0[1], "rank 0 at the sync");
        assertClose(expected, r1[1], "rank 1 at the sync");
    }

    @Test
    void badUseIsRefusedWithTheFix() {
        try (Linear model = new Linear(IN, OUT, true, new Generator(0))) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> new GradientAccumulation(model, 0));
            assertTrue(e.getMessage().contains("steps must be at least 1"), e.getMessage());
            var accumulation = new GradientAccumulation(model, 2);
            var it = accumulation.over(microBatches(0, 2, 2), b -> Math.toIntExact(b[0].size(0))).iterator();
            var micro = it.next();
            try (var scope = Tensors.scope()) {
                micro.backward(new MSELoss().forward(model.forward(micro.batch()[0]), micro.batch()[1]));
                IllegalStateException twice = assertThrows(IllegalStateException.class, () -> micro.backward(
                        new MSELoss().forward(model.forward(micro.batch()[0]), micro.batch()[1])));
                assertTrue(twice.getMessage().contains("already called"), twice.getMessage());
            }
            IllegalArgumentException empty = assertThrows(IllegalArgumentException.class,
                    () -> accumulation.over(java.util.Collections.singletonList(new Tensor[0]), b -> 0).iterator().next());
            assertTrue(empty.getMessage().contains("has 0 samples"), empty.getMessage());
        }
    }

    private static float[][] scaled(float[][] g, float s) {
        float[][] out = new float[g.length][];
        for (int i = 0; i < g.length; i++) {
            out[i] = g[i].clone();
            for (int j = 0; j < out[i].length; j++) {
                out[i][j] *= s;
            }
        }
        return out;
    }

    private static float[][] mean(float[][] a, float[][] b) {
        float[][] out = new float[a.length][];
        for (int i = 0; i < a.length; i++) {
            out[i] = new float[a[i].length];
            for (int j = 0; j < out[i].length; j++) {
                out[i][j] = (a[i][j] + b[i][j]) / 2;
            }
        }
        return out;
    }
}
