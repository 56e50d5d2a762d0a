package org.ddp4j.nn;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeFalse;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.ddp4j.distributed.CountingProcessGroup;
import org.ddp4j.distributed.Distributed;
import org.ddp4j.nn.parallel.DistributedDataParallel;
import org.ddp4j.tensor.Generator;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;
import org.ddp4j.testing.Golden;
import org.ddp4j.testing.Ranks;
import org.ddp4j.vision.models.ResNet;
import org.junit.jupiter.api.Test;

/**
 * SyncBatchNorm's conversion, printing, single-process behaviour, eval mode without communication
 * and its errors. The values over several ranks are {@link SyncBatchNormGoldenTest}'s.
 */
class SyncBatchNormTest {
    private static final Golden G = Golden.load("sync_batch_norm");

    @Test
    void convertingResNet18ReplacesEveryBatchNormOnTheSameTensorsAndPrintsAsPyTorch() {
        try (ResNet model = ResNet.resnet18()) {
            model.eval();
            Tensor frozen = model.stateDict().get("layer2.0.downsample.1.weight");
            frozen.requiresGrad(false);
            Map<String, Tensor> before = model.stateDict();
            Module converted = SyncBatchNorm.convertSyncBatchnorm(model, null);
            assertSame(model, converted);
            // The same tensor objects under the same names, in the same order.
            Map<String, Tensor> after = model.stateDict();
            assertEquals(List.copyOf(before.keySet()), List.copyOf(after.keySet()));
            before.forEach((name, t) -> assertSame(t, after.get(name), name));
            assertFalse(frozen.requiresGrad(), "a frozen weight stays frozen");
            assertTrue(model.stateDict().get("layer2.0.downsample.1.bias").requiresGrad());
            List<Module> layers = new ArrayList<>();
            collect(model, layers);
            long syncs = layers.stream().filter(m -> m instanceof SyncBatchNorm).count();
            assertEquals(20, syncs, "resnet18 has 20 batch norms (3 of them in downsample branches)");
            assertTrue(layers.stream().noneMatch(m -> m.getClass() == BatchNorm2d.class));
            assertTrue(layers.stream().filter(m -> m instanceof SyncBatchNorm).noneMatch(Module::isTraining),
                    "the eval flag is kept");
            assertEquals(G.text("resnet18.repr"), model.toString());
        }
    }

    @Test
    void convertingABatchNormItselfReturnsTheNewLayerAndTheOldOneRunsIt() {
        try (var scope = Tensors.scope(); BatchNorm2d bn = new BatchNorm2d(3, 1e-3, 0.2)) {
            Module converted = SyncBatchNorm.convertSyncBatchnorm(bn);
            SyncBatchNorm sync = assertInstanceOf(SyncBatchNorm.class, converted);
            assertSame(bn.weight(), sync.weight());
            assertSame(bn.runningVar(), sync.runningVar());
            assertEquals("SyncBatchNorm(3, eps=0.001, momentum=0.2, affine=True, track_running_stats=True)",
                    sync.toString());
            // A forward through the old reference counts in the new layer's num_batches_tracked.
            bn.forward(Tensor.of(new float[] {1, 2, 3, 4, 5, 6}, 2, 3, 1, 1));
            assertEquals(1, sync.numBatchesTracked());
            bn.eval();
            assertFalse(sync.isTraining(), "train/eval on the old reference reaches the new layer");
        }
    }

    @Test
    void printsAsPyTorchWithItsOptions() {
        for (String name : new String[] {"w2", "w3"}) {
            Double momentum = name.equals("w3") ? null : 0.1;
            try (SyncBatchNorm bn = new SyncBatchNorm(4, 1e-5, momentum, !name.equals("w3"), true, null)) {
                assertEquals(G.text(name + ".repr"), bn.toString());
            }
        }
    }

    @Test
    void distributedDataParallelPrintsItsModuleAsPyTorch() throws Exception {
        Ranks.withGroups(1, Duration.ofSeconds(20), (rank, group) -> {
            Generator g = new Generator(1);
            Module small = new Sequential(new Conv2d(1, 2, 3, Conv2d.Options.defaults().generator(g)),
                    new BatchNorm2d(2), new ReLU());
            try (DistributedDataParallel ddp = new DistributedDataParallel(small, group,
                    DistributedDataParallel.DEFAULT_BUCKET_CAP_BYTES)) {
                assertEquals(G.text("ddp.repr"), ddp.toString());
            }
            return null;
        });
    }

    @Test
    void withoutAProcessGroupItIsBatchNorm2d() {
        assumeFalse(Distributed.isInitialized(), "another test left the default group initialised");
        assertSameAsBatchNorm(null);
    }

    @Test
    void onAGroupOfOneRankItIsBatchNorm2dAndCommunicatesNothing() throws Exception {
        Ranks.withGroups(1, Duration.ofSeconds(20), (rank, group) -> {
            CountingProcessGroup counting = new CountingProcessGroup(group);
            assertSameAsBatchNorm(counting);
            assertEquals(0, counting.collectives());
            return null;
        });
    }

    /** Two training steps and an eval step give BatchNorm2d's bits: outputs, gradients, buffers. */
    private static void assertSameAsBatchNorm(CountingProcessGroup group) {
        try (var scope = Tensors.scope(); BatchNorm2d bn = new BatchNorm2d(4);
                SyncBatchNorm sync = new SyncBatchNorm(4, 1e-5, 0.1, true, true, group)) {
            for (BatchNorm2d layer : new BatchNorm2d[] {bn, sync}) {
                layer.weight().copyFrom(G.tensor("w2.weight"));
                layer.bias().copyFrom(G.tensor("w2.bias"));
            }
            for (int step = 0; step < 2; step++) {
                String key = "w2." + step;
                Tensor xa = G.tensor(key + ".x").requiresGrad(true);
                Tensor xb = G.tensor(key + ".x").requiresGrad(true);
                Tensor ya = bn.forward(xa);
                Tensor yb = sync.forward(xb);
                assertArrayEquals(ya.toFloatArray(), yb.toFloatArray(), key + " y");
                ya.backward(G.tensor(key + ".grad_y"));
                yb.backward(G.tensor(key + ".grad_y"));
                assertArrayEquals(xa.grad().toFloatArray(), xb.grad().toFloatArray(), key + " grad_x");
            }
            assertArrayEquals(bn.weight().grad().toFloatArray(), sync.weight().grad().toFloatArray());
            assertArrayEquals(bn.runningMean().toFloatArray(), sync.runningMean().toFloatArray());
            assertArrayEquals(bn.runningVar().toFloatArray(), sync.runningVar().toFloatArray());
            assertEquals(2, sync.numBatchesTracked());
            bn.eval();
            sync.eval();
            assertArrayEquals(bn.forward(G.tensor("w2.eval.x")).toFloatArray(),
                    sync.forward(G.tensor("w2.eval.x")).toFloatArray(), "eval y");
        }
    }

    @Test
    void evalModeIssuesNoCollectiveWhileTrainingIssuesOneEachWay() throws Exception {
        List<int[]> counts = Ranks.withGroups(2, Duration.ofSeconds(20), (rank, group) -> {
            CountingProcessGroup counting = new CountingProcessGroup(group);
            try (var scope = Tensors.scope(); SyncBatchNorm bn = new SyncBatchNorm(4, 1e-5, 0.1, true, true, counting)) {
                Tensor x = SyncBatchNormGoldenTest.slice("w2.0.x", rank * 3L, 3, new long[] {4, 3, 5}).requiresGrad(true);
                Tensor y = bn.forward(x);
                int afterForward = counting.collectives();
                y.backward(Tensor.full(1, y.dtype(), y.device(), y.shape()));
                int afterBackward = counting.collectives();
                bn.eval();
                Tensor e = bn.forward(x);
                e.backward(Tensor.full(1, e.dtype(), e.device(), e.shape()));
                try (var noGrad = Tensors.noGrad()) {
                    bn.forward(x);
                }
                return new int[] {afterForward, afterBackward, counting.collectives()};
            }
        });
        for (int[] c : counts) {
            assertArrayEquals(new int[] {1, 2, 2}, c, "all-gather in forward, all-reduce in backward, nothing in eval");
        }
    }

    @Test
    void aGroupWithAtMostOneValuePerChannelFailsOnEveryRankAsPyTorch() throws Exception {
        for (long[] batches : new long[][] {{1, 0}, {0, 0}}) {
            List<String> messages = Ranks.withGroups(2, Duration.ofSeconds(20), (rank, group) -> {
                try (var scope = Tensors.scope(); SyncBatchNorm bn = new SyncBatchNorm(2, 1e-5, 0.1, true, true, group)) {
                    Tensor x = Tensor.zeros(batches[rank], 2, 1, 1);
                    float before = bn.runningVar().toFloatArray()[0];
                    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> bn.forward(x));
                    assertEquals(before, bn.runningVar().toFloatArray()[0], "nothing is updated");
                    return e.getMessage();
                }
            });
            for (String m : messages) {
                assertTrue(m.contains("expected more than 1 value per channel when training")
                        && m.contains("[" + batches[0] + ", " + batches[1] + "]"), m);
            }
        }
    }

    /** Ranks whose SyncBatchNorm layers have different channel counts fail naming the layer, not only the sizes. */
    @Test
    void differentChannelCountsOnTheRanksAreNamed() throws Exception {
        List<String> messages = Ranks.withGroups(2, Duration.ofSeconds(20), (rank, group) -> {
            int channels = rank == 0 ? 4 : 3;
            try (var scope = Tensors.scope(); SyncBatchNorm bn = new SyncBatchNorm(channels, 1e-5, 0.1, true, true, group)) {
                return assertThrows(org.ddp4j.distributed.DistributedException.class,
                        () -> bn.forward(Tensor.zeros(2, channels, 2, 2))).getMessage();
            }
        });
        assertTrue(messages.get(0).contains("SyncBatchNorm over 4 channels on rank 0")
                && messages.get(0).contains("same number of channels"), messages.get(0));
        assertTrue(messages.get(1).contains("SyncBatchNorm over 3 channels on rank 1"), messages.get(1));
    }

    @Test
    void batchNormPlusResidualPlusReluIsTheSeparateOpsOnTwoRanks() throws Exception {
        Ranks.withGroups(2, Duration.ofSeconds(20), (rank, group) -> {
            try (var scope = Tensors.scope(); SyncBatchNorm fused = new SyncBatchNorm(4, 1e-5, 0.1, true, true, group);
                    SyncBatchNorm separate = new SyncBatchNorm(4, 1e-5, 0.1, true, true, group)) {
                long[] sample = {4, 3, 5};
                Tensor x = SyncBatchNormGoldenTest.slice("w2.0.x", rank * 3L, 3, sample).requiresGrad(true);
                Tensor xs = SyncBatchNormGoldenTest.slice("w2.0.x", rank * 3L, 3, sample).requiresGrad(true);
                Tensor r = SyncBatchNormGoldenTest.slice("w2.1.x", rank * 3L, 3, sample).mul(0.05f).requiresGrad(true);
                Tensor rs = SyncBatchNormGoldenTest.slice("w2.1.x", rank * 3L, 3, sample).mul(0.05f).requiresGrad(true);
                Tensor gy = SyncBatchNormGoldenTest.slice("w2.0.grad_y", rank * 3L, 3, sample);
                Tensor y = fused.forwardRelu(x, r);
                Tensor ys = org.ddp4j.nn.functional.ReluFunction.apply(separate.forward(xs).add(rs));
                assertArrayEquals(ys.toFloatArray(), y.toFloatArray(), "y");
                y.backward(gy);
                ys.backward(gy);
                assertArrayEquals(xs.grad().toFloatArray(), x.grad().toFloatArray(), "grad x");
                assertArrayEquals(rs.grad().toFloatArray(), r.grad().toFloatArray(), "grad residual");
                assertArrayEquals(separate.weight().grad().toFloatArray(), fused.weight().grad().toFloatArray());
                assertArrayEquals(separate.bias().grad().toFloatArray(), fused.bias().grad().toFloatArray());
                assertArrayEquals(separate.runningVar().toFloatArray(), fused.runningVar().toFloatArray());
                float[] yv = y.toFloatArray();
                int zeros = 0;
                for (float v : yv) {
                    zeros += v == 0 ? 1 : 0;
                }
                assertTrue(zeros > 0 && zeros < yv.length, "the ReLU cuts some values and keeps others");
            }
            return null;
        });
    }

    @Test
    void rejectsInputOfFewerThanTwoDimensions() throws Exception {
        Ranks.withGroups(2, Duration.ofSeconds(20), (rank, group) -> {
            try (var scope = Tensors.scope(); SyncBatchNorm bn = new SyncBatchNorm(3, 1e-5, 0.1, true, true, group)) {
                IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                        () -> bn.forward(Tensor.zeros(3)));
                assertTrue(e.getMessage().contains("at least 2-D"), e.getMessage());
            }
            return null;
        });
    }

    private static void collect(Module m, List<Module> out) {
        out.add(m);
        m.namedChildren().values().forEach(c -> collect(c, out));
    }
}
