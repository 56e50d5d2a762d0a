package org.ddp4j.nn.parallel;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.IntFunction;
import org.ddp4j.distributed.store.HashStore;
import org.ddp4j.examples.ConvNet;
import org.ddp4j.nn.CrossEntropyLoss;
import org.ddp4j.nn.Linear;
import org.ddp4j.nn.Module;
import org.ddp4j.optim.SGD;
import org.ddp4j.tensor.DType;
import org.ddp4j.tensor.Generator;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;
import org.ddp4j.testing.Assertions2;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.ddp4j.distributed.DistributedException;
import org.ddp4j.distributed.ProcessGroup;
import org.ddp4j.distributed.ProcessGroupGloo;

/**
 * DDP on 2 ranks (threads in one JVM, Gloo over a HashStore), each with half the batch, against
 * one process on the whole batch. BatchNorm normalises each rank's half separately under DDP (as
 * in PyTorch without SyncBatchNorm), so the single-process reference runs the two halves as two
 * forward passes in the same step and averages their losses: the gradients are then the same
 * quantity DDP computes, and the parameters must agree after every step.
 */
@Timeout(value = 180, unit = TimeUnit.SECONDS) // backstop above onRanks' bound (group timeout + 30 s)
class DistributedDataParallelTest {
    private static final int BATCH = 8;
    private static final int STEPS = 3;
    private static final Duration TIMEOUT = Duration.ofSeconds(60);

    private final float[] images = new Generator(7).uniform(BATCH * STEPS * 28 * 28, 0f, 1f);
    private final long[] labels = labels();

    private static long[] labels() {
        long[] y = new long[BATCH * STEPS];
        for (int i = 0; i < y.length; i++) {
            y[i] = (i * 7 + 3) % 10;
        }
        return y;
    }

    private Tensor images(int step, int from, int count) {
        return Tensor.ofRegion(images, (step * BATCH + from) * 28 * 28, count, 1, 28, 28);
    }

    private Tensor labels(int step, int from, int count) {
        return Tensor.ofLongs(Arrays.copyOfRange(labels, step * BATCH + from, step * BATCH + from + count), count);
    }

    private static SGD sgd(List<Tensor> params) {
        return new SGD(params, 0.05, 0.9, 0, 0, false);
    }

    /** One process, whole batch as two halves per step. */
    private Map<String, float[]> singleProcess() {
        ConvNet model = new ConvNet(10, new Generator(0));
        SGD opt = sgd(model.parameters());
        CrossEntropyLoss ce = new CrossEntropyLoss();
        for (int step = 0; step < STEPS; step++) {
            try (var scope = Tensors.scope()) {
                opt.zeroGrad();
                Tensor l0 = ce.forward(model.forward(images(step, 0, BATCH / 2)), labels(step, 0, BATCH / 2));
                Tensor l1 = ce.forward(model.forward(images(step, BATCH / 2, BATCH / 2)), labels(step, BATCH / 2, BATCH / 2));
                l0.add(l1).mul(0.5f).backward();
                opt.step();
            }
        }
        Map<String, float[]> out = values(model.namedParameters());
        opt.close();
        model.close();
        return out;
    }

    private static Map<String, float[]> values(Map<String, Tensor> params) {
        Map<String, float[]> out = new LinkedHashMap<>();
        params.forEach((name, t) -> out.put(name.startsWith("module.") ? name.substring(7) : name, t.toFloatArray()));
        return out;
    }

    /** Runs body(rank) on `world` threads, each with its own Gloo group over one HashStore. */
    private static <T> List<T> onRanks(int world, IntFunction<Callable<T>> body) throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(world);
        try {
            List<Future<T>> futures = new ArrayList<>();
            for (int r = 0; r < world; r++) {
                futures.add(pool.submit(body.apply(r)));
            }
            List<T> out = new ArrayList<>();
            // Longer than the groups' own timeout, so a collective's timeout error comes first.
            Duration limit = TIMEOUT.plusSeconds(30);
            long deadline = System.nanoTime() + limit.toNanos();
            for (int r = 0; r < world; r++) {
                try {
                    out.add(futures.get(r).get(Math.max(1, deadline - System.nanoTime()), TimeUnit.NANOSECONDS));
                } catch (TimeoutException e) {
                    throw new AssertionError("rank " + r + " is still running after " + limit.toSeconds()
                            + " s: a collective or the reducer hung");
                }
            }
            return out;
        } finally {
            pool.shutdownNow();
        }
    }

    private List<Map<String, float[]>> ddp(long bucketCapBytes) throws Exception {
        return ddp(bucketCapBytes, true);
    }

    private List<Map<String, float[]>> ddp(long bucketCapBytes, boolean overlap) throws Exception {
        HashStore store = new HashStore(TIMEOUT);
        return onRanks(2, rank -> () -> {
            try (ProcessGroup group = new ProcessGroupGloo(store, rank, 2, TIMEOUT)) {
                // Rank 1 starts from different weights: DDP's broadcast from rank 0 must fix that.
                ConvNet net = new ConvNet(10, new Generator(rank == 0 ? 0 : 99));
                DistributedDataParallel model = new DistributedDataParallel(net, group, bucketCapBytes);
                model.setOverlap(overlap);
                SGD opt = sgd(model.parameters());
                CrossEntropyLoss ce = new CrossEntropyLoss();
                int half = BATCH / 2;
                for (int step = 0; step < STEPS; step++) {
                    try (var scope = Tensors.scope()) {
                        opt.zeroGrad();
                        ce.forward(model.forward(images(step, rank * half, half)), labels(step, rank * half, half)).backward();
                        opt.step();
                    }
                }
                Map<String, float[]> out = values(model.namedParameters());
                opt.close();
                model.close();
                return out;
            }
        });
    }

    @Test
    void twoRanksWithHalfBatchesMatchOneProcess() throws Exception {
        Map<String, float[]> expected = singleProcess();
        List<Map<String, float[]>> ranks = ddp(DistributedDataParallel.DEFAULT_BUCKET_CAP_BYTES);
        for (Map<String, float[]> got : ranks) {
            assertEquals(expected.keySet(), got.keySet());
            for (String name : expected.keySet()) {
                Assertions2.assertClose(expected.get(name), got.get(name), 1e-5, 1e-6, name);
            }
        }
    }

    @Test
    void resultsDoNotDependOnBucketBoundaries() throws Exception {
        List<Map<String, float[]>> big = ddp(DistributedDataParallel.DEFAULT_BUCKET_CAP_BYTES);
        List<Map<String, float[]>> small = ddp(4096); // one bucket per parameter or so
        for (String name : big.get(0).keySet()) {
            assertArrayEquals(big.get(0).get(name), small.get(0).get(name), name);
            assertArrayEquals(big.get(1).get(name), small.get(1).get(name), name);
        }
    }

    @Test
    void allReduceAfterBackwardGivesTheSameResultsAsOverlap() throws Exception {
        List<Map<String, float[]>> overlapped = ddp(4096, true);
        List<Map<String, float[]>> after = ddp(4096, false);
        for (String name : overlapped.get(0).keySet()) {
            assertArrayEquals(overlapped.get(0).get(name), after.get(0).get(name), name);
            assertArrayEquals(overlapped.get(1).get(name), after.get(1).get(name), name);
        }
    }

    /** Two Linears registered as first, second but applied second, then first. */
    private static final class Swapped extends Module {
        final Linear first;
        final Linear second;

        Swapped(Generator g) {
            first = registerModule("first", new Linear(3, 3, true, g));
            second = registerModule("second", new Linear(3, 3, true, g));
        }

        @Override
        public Tensor forward(Tensor input) {
            return first.forward(second.forward(input));
        }
    }

    @Test
    void bucketsAreRebuiltOnceInTheObservedGradientOrder() throws Exception {
        HashStore store = new HashStore(TIMEOUT);
        onRanks(2, rank -> () -> {
            try (ProcessGroup group = new ProcessGroupGloo(store, rank, 2, TIMEOUT)) {
                Swapped net = new Swapped(new Generator(rank));
                // 12 float32 values (48 B) per Linear: a 48-byte cap gives one bucket per Linear.
                DistributedDataParallel model = new DistributedDataParallel(net, group, 48);
                List<List<List<Tensor>>> seen = new ArrayList<>();
                seen.add(model.bucketParameters());
                SGD opt = new SGD(model.parameters(), 0.1);
                for (int step = 0; step < 3; step++) {
                    try (var scope = Tensors.scope()) {
                        opt.zeroGrad();
                        Tensor x = Tensor.of(new Generator(10 * step + rank).normal(6), 2, 3);
                        model.forward(x).sum().backward();
                        opt.step();
                    }
                    seen.add(model.bucketParameters());
                }
                // Reverse parameter order at first: the second Linear's bucket launches first, yet
                // its gradients become ready last (it is applied first).
                assertEquals(List.of(List.of(net.second.bias(), net.second.weight()),
                        List.of(net.first.bias(), net.first.weight())), seen.get(0));
                assertEquals(seen.get(0), seen.get(1), "rebuilt before the second forward");
                assertEquals(2, seen.get(2).size());
                assertTrue(seen.get(2).get(0).contains(net.first.weight()), "not rebuilt in the observed order: "
                        + seen.get(2));
                assertTrue(seen.get(2).get(0).contains(net.first.bias()));
                assertEquals(seen.get(2), seen.get(3), "rebuilt more than once");
                // Gradients are views of the new buckets and still hold this step's averaged values.
                assertEquals(9, net.first.weight().grad().numel());
                opt.close();
                model.close();
                return null;
            }
        });
    }

    /** One Linear applied twice: its parameters get two gradient contributions per backward. */
    private static final class Twice extends Module {
        final Linear linear;

        Twice(Generator g) {
            linear = registerModule("linear", new Linear(3, 3, true, g));
        }

        @Override
        public Tensor forward(Tensor input) {
            return linear.forward(linear.forward(input));
        }
    }

    @Test
    void sharedParametersAreAllReducedAfterTheirLastUse() throws Exception {
        float[] x = new Generator(5).normal(4 * 3);
        Map<String, float[]> expected;
        try (Twice net = new Twice(new Generator(0)); SGD opt = new SGD(net.parameters(), 0.1)) {
            int[] hookCalls = new int[1];
            net.linear.weight().registerPostAccumulateGradHook(p -> hookCalls[0]++);
            for (int step = 0; step < 3; step++) {
                try (var scope = Tensors.scope()) {
                    opt.zeroGrad();
                    Tensor l0 = net.forward(Tensor.ofRegion(x, 0, 2, 3)).sum();
                    Tensor l1 = net.forward(Tensor.ofRegion(x, 6, 2, 3)).sum();
                    l0.add(l1).mul(0.5f).backward();
                    opt.step();
                }
            }
            assertEquals(3, hookCalls[0], "one post-accumulate hook call per backward, not one per use");
            expected = values(net.namedParameters());
        }
        HashStore store = new HashStore(TIMEOUT);
        List<Map<String, float[]>> got = onRanks(2, rank -> () -> {
            try (ProcessGroup group = new ProcessGroupGloo(store, rank, 2, TIMEOUT);
                    DistributedDataParallel model = new DistributedDataParallel(new Twice(new Generator(0)), group, 12);
                    SGD opt = new SGD(model.parameters(), 0.1)) {
                for (int step = 0; step < 3; step++) {
                    try (var scope = Tensors.scope()) {
                        opt.zeroGrad();
                        model.forward(Tensor.ofRegion(x, 6 * rank, 2, 3)).sum().backward();
                        opt.step();
                    }
                }
                return values(model.namedParameters());
            }
        });
        for (Map<String, float[]> g : got) {
            for (String name : expected.keySet()) {
                Assertions2.assertClose(expected.get(name), g.get(name), 1e-5, 1e-6, name);
            }
        }
    }

    @Test
    void parametersOfDifferentShapesFailAtConstructionNamingEveryRank() throws Exception {
        HashStore store = new HashStore(TIMEOUT);
        List<String> messages = onRanks(2, rank -> () -> {
            try (ProcessGroup group = new ProcessGroupGloo(store, rank, 2, TIMEOUT)) {
                Linear net = new Linear(2, rank == 0 ? 2 : 3, true, new Generator(0));
                DistributedException e = assertThrows(DistributedException.class,
                        () -> new DistributedDataParallel(net, group, DistributedDataParallel.DEFAULT_BUCKET_CAP_BYTES));
                // The group is still usable.
                try (var scope = Tensors.scope()) {
                    Tensor t = Tensor.of(new float[] {1}, 1);
                    group.allReduce(t).await();
                    assertEquals(2f, t.item());
                }
                net.close();
                return e.getMessage();
            }
        });
        for (String m : messages) {
            assertTrue(m.contains("rank 0: 2 parameters with shapes [2, 2], [2]"), m);
            assertTrue(m.contains("rank 1: 2 parameters with shapes [3, 2], [3]"), m);
        }
        assertTrue(messages.get(0).contains("first at parameter 0 (weight here): [2, 2] on rank 0, [3, 2] on rank 1"),
                messages.get(0));
        assertTrue(messages.get(1).contains("first at parameter 0 (weight here): [3, 2] on rank 1, [2, 2] on rank 0"),
                messages.get(1));
    }

    @Test
    void bucketsFollowTheCapsInReverseParameterOrder() throws Exception {
        HashStore store = new HashStore(TIMEOUT);
        List<List<Long>> sizes = onRanks(1, rank -> () -> {
            try (ProcessGroup group = new ProcessGroupGloo(store, 0, 1, TIMEOUT);
                    DistributedDataParallel model = new DistributedDataParallel(new ConvNet(10, new Generator(0)), group, 40_000)) {
                assertEquals("module.layer1.0.weight", model.namedParameters().keySet().iterator().next());
                return model.bucketBytes();
            }
        });
        // Reverse order, each bucket closed once it reaches 40 kB (PyTorch's rule): fc.bias (40 B) +
        // fc.weight (62720 B); then layer2's BatchNorm (2 x 128 B), conv bias (128 B) and weight
        // (51200 B); then layer1's four parameters (1792 B).
        assertEquals(List.of(62760L, 51584L, 1792L), sizes.get(0));
        long total = sizes.get(0).stream().mapToLong(Long::longValue).sum();
        assertEquals(4L * (16 * 25 + 16 + 16 + 16 + 32 * 16 * 25 + 32 + 32 + 32 + 1568 * 10 + 10), total);
    }

    @Test
    void noSyncKeepsGradientsLocalUntilTheNextSyncedBackward() throws Exception {
        HashStore store = new HashStore(TIMEOUT);
        List<float[][]> grads = onRanks(2, rank -> () -> {
            try (ProcessGroup group = new ProcessGroupGloo(store, rank, 2, TIMEOUT);
                    DistributedDataParallel model = new DistributedDataParallel(new ConvNet(10, new Generator(0)), group,
                            DistributedDataParallel.DEFAULT_BUCKET_CAP_BYTES)) {
                CrossEntropyLoss ce = new CrossEntropyLoss();
                Tensor fcBias = model.namedParameters().get("module.fc.bias");
                float[] local;
                try (var scope = Tensors.scope(); var noSync = model.noSync()) {
                    ce.forward(model.forward(images(0, rank * 4, 4)), labels(0, rank * 4, 4)).backward();
                    local = fcBias.grad().toFloatArray();
                }
                try (var scope = Tensors.scope()) {
                    ce.forward(model.forward(images(1, rank * 4, 4)), labels(1, rank * 4, 4)).backward();
                }
                return new float[][] {local, fcBias.grad().toFloatArray()};
            }
        });
        assertFalse(Arrays.equals(grads.get(0)[0], grads.get(1)[0]), "gradients were synchronised under noSync()");
        assertArrayEquals(grads.get(0)[1], grads.get(1)[1], "gradients differ after a synced backward");
        assertTrue(Math.abs(grads.get(0)[1][0]) > 0);
    }

    /**
     * As PyTorch's broadcast_buffers=True (require_forward_param_sync): after training on different
     * halves, the ranks' running statistics differ; the first eval forward under noGrad gives every
     * rank rank 0's, so both compute the same outputs, and later eval forwards make no collective
     * (rank 0 runs three, rank 1 one, and the barrier after them still matches).
     */
    @Test
    void firstEvalForwardAfterTrainingBroadcastsRankZeroBuffers() throws Exception {
        HashStore store = new HashStore(TIMEOUT);
        List<float[][]> results = onRanks(2, rank -> () -> {
            try (ProcessGroup group = new ProcessGroupGloo(store, rank, 2, TIMEOUT);
                    DistributedDataParallel model = new DistributedDataParallel(new ConvNet(10, new Generator(0)), group,
                            DistributedDataParallel.DEFAULT_BUCKET_CAP_BYTES);
                    SGD opt = sgd(model.parameters())) {
                CrossEntropyLoss ce = new CrossEntropyLoss();
                for (int step = 0; step < 2; step++) {
                    try (var scope = Tensors.scope()) {
                        opt.zeroGrad();
                        ce.forward(model.forward(images(step, rank * 4, 4)), labels(step, rank * 4, 4)).backward();
                        opt.step();
                    }
                }
                float[] trained = flat(model.namedBuffers());
                model.eval();
                float[] output;
                try (var scope = Tensors.scope(); var noGrad = Tensors.noGrad()) {
                    output = model.forward(images(2, 0, 4)).toFloatArray();
                    for (int extra = 0; extra < (rank == 0 ? 2 : 0); extra++) {
                        model.forward(images(2, 4, 4));
                    }
                }
                float[] evaluated = flat(model.namedBuffers());
                group.barrier().await();
                return new float[][] {trained, evaluated, output};
            }
        });
        float[][] rank0 = results.get(0), rank1 = results.get(1);
        assertFalse(Arrays.equals(rank0[0], rank1[0]), "the ranks' running statistics should differ after training");
        assertArrayEquals(rank0[0], rank1[1], "rank 1 did not get rank 0's buffers at the first eval forward");
        assertArrayEquals(rank0[0], rank0[1], "eval forwards changed rank 0's buffers");
        assertArrayEquals(rank0[2], rank1[2], "ranks evaluated the same input differently");
    }

    /**
     * A second backward through one DDP forward would add the gradients again and all-reduce them
     * a step ahead of the other rank (PyTorch refuses it): it is refused on the rank that does it,
     * naming both usual causes, and the next forward + backward works again.
     */
    @Test
    void aSecondBackwardThroughOneForwardIsRefused() throws Exception {
        List<String> messages = onRanks(1, rank -> () -> {
            try (ProcessGroup group = new ProcessGroupGloo(new HashStore(TIMEOUT), 0, 1, TIMEOUT);
                    DistributedDataParallel model = new DistributedDataParallel(new ConvNet(10, new Generator(0)), group,
                            DistributedDataParallel.DEFAULT_BUCKET_CAP_BYTES)) {
                CrossEntropyLoss ce = new CrossEntropyLoss();
                String message;
                try (var scope = Tensors.scope()) {
                    Tensor loss = ce.forward(model.forward(images(0, 0, 4)), labels(0, 0, 4));
                    loss.backward();
                    float[] once = model.namedParameters().get("module.fc.bias").grad().toFloatArray();
                    message = assertThrows(IllegalStateException.class, loss::backward)
                            .getMessage();
                    // A fresh forward makes backward legal again.
                    model.zeroGrad();
                    ce.forward(model.forward(images(0, 0, 4)), labels(0, 0, 4)).backward();
                    assertArrayEquals(once, model.namedParameters().get("module.fc.bias").grad().toFloatArray());
                }
                try (var scope = Tensors.scope()) {
                    Tensor loss = ce.forward(model.module().forward(images(1, 0, 4)), labels(1, 0, 4));
                    assertThrows(IllegalStateException.class, loss::backward);
                }
                return message;
            }
        });
        String m = messages.get(0);
        assertTrue(m.contains("second backward") && m.contains("run the forward again") && m.contains("model.module()"), m);
    }

    private static float[] flat(Map<String, Tensor> tensors) {
        List<float[]> parts = new ArrayList<>();
        for (Tensor t : tensors.values()) {
            if (t.dtype() == DType.FLOAT32) {
                parts.add(t.toFloatArray());
            }
        }
        float[] out = new float[parts.stream().mapToInt(a -> a.length).sum()];
        int at = 0;
        for (float[] a : parts) {
            System.arraycopy(a, 0, out, at, a.length);
            at += a.length;
        }
        return out;
    }
}
