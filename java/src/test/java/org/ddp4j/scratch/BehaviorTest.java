package org.ddp4j.scratch;

import static org.junit.jupiter.api.Assertions.*;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.ddp4j.distributed.fsdp.FSDPModule;
import org.ddp4j.distributed.fsdp.FullyShard;
import org.ddp4j.distributed.fsdp.FullyShardOptions;
import org.ddp4j.optim.AdamW;
import org.ddp4j.optim.SGD;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;
import org.ddp4j.testing.Ranks;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(value = 60, unit = TimeUnit.SECONDS)
class BehaviorTest {
    static final Duration T = Duration.ofSeconds(30);

    static Toy lin(long seed) {
        return new Toy(Toy.shapes("w", new long[] {3, 4}, "b", new long[] {3}), seed,
                (m, x) -> x.matmul(m.p("w").transpose(0, 1)).add(m.p("b")).pow(2).mean());
    }

    @Test
    void frozenParameterStaysFrozen() throws Exception {
        Ranks.withGroups(2, T, (rank, group) -> {
            Toy net = lin(1);
            net.p("b").requiresGrad(false);
            float[] before = net.p("b").toFloatArray();
            FSDPModule fsdp = FullyShard.fullyShard(net, FullyShardOptions.defaults().processGroup(group));
            Tensor bShard = fsdp.namedParameters().get("b");
            String info = "shard requiresGrad=" + bShard.requiresGrad();
            AdamW opt = new AdamW(fsdp.parameters(), AdamW.Options.defaults().lr(0.1).weightDecay(0.1));
            for (int s = 0; s < 2; s++) {
                try (var sc = Tensors.scope()) {
                    opt.zeroGrad();
                    fsdp.forward(Toy.input(rank, s, 5, 4)).backward();
                    info += " grad(b shard)=" + (bShard.grad() == null ? "null" : java.util.Arrays.toString(bShard.grad().toFloatArray()));
                    opt.step();
                }
            }
            Map<String, Tensor> full = fsdp.fullStateDict();
            float[] after = full.get("b").toFloatArray();
            assertArrayEquals(before, after, 0f, "frozen b changed on rank " + rank + " (" + info + ")");
            return null;
        });
    }

    @Test
    void unusedParameterNotTouched() throws Exception {
        Ranks.withGroups(2, T, (rank, group) -> {
            Toy net = new Toy(Toy.shapes("w", new long[] {3, 4}, "unused", new long[] {2, 2}), 1,
                    (m, x) -> x.matmul(m.p("w").transpose(0, 1)).pow(2).mean());
            float[] before = net.p("unused").toFloatArray();
            FSDPModule fsdp = FullyShard.fullyShard(net, FullyShardOptions.defaults().processGroup(group));
            Tensor u = fsdp.namedParameters().get("unused");
            AdamW opt = new AdamW(fsdp.parameters(), AdamW.Options.defaults().lr(0.1).weightDecay(0.1));
            String info = "";
            try (var sc = Tensors.scope()) {
                opt.zeroGrad();
                fsdp.forward(Toy.input(rank, 0, 5, 4)).backward();
                info = "grad(unused shard)=" + (u.grad() == null ? "null" : java.util.Arrays.toString(u.grad().toFloatArray()));
                opt.step();
            }
            Map<String, Tensor> full = fsdp.fullStateDict();
            assertArrayEquals(before, full.get("unused").toFloatArray(), 0f, "unused param changed on rank " + rank + " " + info);
            return null;
        });
    }

    /** Evaluation under noGrad through fsdp, then train; compare to plain. */
    @Test
    void evalNoGradThenTrain() throws Exception {
        trainCompare(2, (fsdp, net, rank, s) -> {
            try (var ng = Tensors.noGrad(); var sc = Tensors.scope()) {
                fsdp.forward(Toy.input(rank, 99, 5, 4));
            }
        });
    }

    /** Evaluation by calling the inner module directly under noGrad, each step after step(). */
    @Test
    void innerForwardNoGradThenTrain() throws Exception {
        trainCompare(2, (fsdp, net, rank, s) -> {
            try (var ng = Tensors.noGrad(); var sc = Tensors.scope()) {
                net.forward(Toy.input(rank, 99, 5, 4));
            }
        });
    }

    /** Reading a parameter of the inner module (e.g. for logging) after step. */
    @Test
    void readParameterForLoggingAfterStep() throws Exception {
        trainCompare(2, (fsdp, net, rank, s) -> {
            net.p("s").toFloatArray();
            ((Toy) net.namedChildren().get("u1")).p("w").toFloatArray();
        });
    }

    interface Between { void run(FSDPModule fsdp, Toy net, int rank, int step) throws Exception; }

    static Toy nested(long seed) {
        return ShapesTest.nested(seed);
    }

    /** SGD on the nested model, with `between` run after each optimizer step, `before` before backward. */
    static void trainCompare(int world, Between afterStep) throws Exception {
        trainCompare(world, afterStep, null);
    }

    static void trainCompare(int world, Between afterStep, Between betweenBackwardAndStep) throws Exception {
        Ranks.withGroups(world, T, (rank, group) -> {
            Toy net = nested(1);
            Toy plain = nested(1);
            FSDPModule fsdp = ShapesTest.nestedSharder(FullyShardOptions.defaults()).shard(net, group);
            SGD opt = new SGD(fsdp.parameters(), 0.1);
            for (int s = 0; s < 3; s++) {
                final int step = s;
                try (var sc = Tensors.scope()) {
                    opt.zeroGrad();
                    fsdp.forward(Toy.input(rank, step, 5, 4)).backward();
                    if (betweenBackwardAndStep != null) betweenBackwardAndStep.run(fsdp, net, rank, s);
                    opt.step();
                }
                if (afterStep != null) afterStep.run(fsdp, net, rank, s);
                Map<String, float[]> g = Toy.avgGrads(plain, world, r -> plain.forward(Toy.input(r, step, 5, 4)));
                Toy.sgd(plain, g, 0.1f);
            }
            Map<String, Tensor> full = fsdp.fullStateDict();
            List<String> bad = Toy.compare(Toy.values(plain.stateDict()), Toy.values(full), 1e-5f);
            full.values().forEach(Tensor::close);
            assertTrue(bad.isEmpty(), "rank " + rank + " at the end: " + bad);
            return null;
        });
    }

    /** Parameter read between backward and step: gathers the unit, then the step changes the shards. */
    @Test
    void readParameterBetweenBackwardAndStep() throws Exception {
        trainCompare(2, null, (fsdp, net, rank, s) -> { net.p("s").toFloatArray(); ((Toy) net.namedChildren().get("u1")).p("w").toFloatArray(); });
    }

    @Test
    void explicitUnshardBetweenBackwardAndStep() throws Exception {
        trainCompare(2, null, (fsdp, net, rank, s) -> fsdp.unshard());
    }

    @Test
    void evalNoGradBetweenBackwardAndStepNoReshard() throws Exception {
        trainCompare(2, null, (fsdp, net, rank, s) -> { try (var ng = Tensors.noGrad(); var sc = Tensors.scope()) { fsdp.forward(Toy.input(rank, 99, 5, 4)); } });
    }

    @Test
    void forwardWithGradNoBackwardAfterStep() throws Exception {
        // e.g. computing a validation loss without noGrad after the step; no backward follows
        trainCompare(2, (fsdp, net, rank, s) -> { try (var sc = Tensors.scope()) { fsdp.forward(Toy.input(rank, 99, 5, 4)); } });
    }

    @Test
    void gradAccumulationNoSyncThenSync() throws Exception {
        Ranks.withGroups(2, T, (rank, group) -> {
            Toy net = nested(1);
            Toy plain = nested(1);
            FSDPModule fsdp = ShapesTest.nestedSharder(FullyShardOptions.defaults()).shard(net, group);
            SGD opt = new SGD(fsdp.parameters(), 0.1);
            for (int s = 0; s < 2; s++) {
                try (var sc = Tensors.scope()) {
                    opt.zeroGrad();
                    fsdp.setRequiresGradientSync(false);
                    fsdp.forward(Toy.input(rank, 10 * s, 5, 4)).backward();
                    fsdp.setRequiresGradientSync(true);
                    fsdp.forward(Toy.input(rank, 10 * s + 1, 5, 4)).backward();
                    opt.step();
                }
                final int step = s;
                Map<String, float[]> g = Toy.avgGrads(plain, 2, r -> plain.forward(Toy.input(r, 10 * step, 5, 4))
                        .add(plain.forward(Toy.input(r, 10 * step + 1, 5, 4))));
                Toy.sgd(plain, g, 0.1f);
                Map<String, Tensor> full = fsdp.fullStateDict();
                List<String> bad = Toy.compare(Toy.values(plain.stateDict()), Toy.values(full), 1e-5f);
                assertTrue(bad.isEmpty(), "rank " + rank + " step " + s + ": " + bad);
            }
            return null;
        });
    }

    @Test
    void stateDictRoundTripAndMissingKey() throws Exception {
        Ranks.withGroups(2, T, (rank, group) -> {
            Toy net = nested(1);
            FSDPModule fsdp = ShapesTest.nestedSharder(FullyShardOptions.defaults()).shard(net, group);
            Map<String, Tensor> full = fsdp.fullStateDict();
            Map<String, float[]> v0 = Toy.values(full);
            // modify, load, compare
            Map<String, Tensor> other = Toy.values(nested(5).stateDict()).entrySet().stream().collect(
                    java.util.stream.Collectors.toMap(Map.Entry::getKey, e -> Tensor.of(e.getValue(), full.get(e.getKey()).shape()).keep(),
                            (a, b) -> a, java.util.LinkedHashMap::new));
            fsdp.loadStateDict(other);
            assertTrue(Toy.compare(Toy.values(other), Toy.values(fsdp.fullStateDict()), 0f).isEmpty(), "round trip");
            Map<String, Tensor> missing = new java.util.LinkedHashMap<>(full);
            missing.remove("u2.b");
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> fsdp.loadStateDict(missing));
            if (rank == 0) System.out.println("missing-key message: " + e.getMessage());
            assertTrue(Toy.compare(Toy.values(other), Toy.values(fsdp.fullStateDict()), 0f).isEmpty(), "unchanged after failed load");
            // still trains
            SGD opt = new SGD(fsdp.parameters(), 0.1);
            try (var sc = Tensors.scope()) {
                fsdp.forward(Toy.input(rank, 0, 5, 4)).backward();
                opt.step();
            }
            for (Map.Entry<String, Tensor> p : net.namedParameters().entrySet()) {
                assertFalse(p.getValue().hasStorage(), p.getKey() + " still gathered");
            }
            // sharded stateDict shapes
            if (rank == 0) {
                fsdp.stateDict().forEach((k, t) -> System.out.println("sharded " + k + " " + java.util.Arrays.toString(t.shape())));
            }
            return null;
        });
    }

    @Test
    void noParameters() throws Exception {
        Ranks.withGroups(2, T, (rank, group) -> {
            Toy net = new Toy(Toy.shapes(), 1, (m, x) -> x.mul(2.0));
            FSDPModule fsdp = FullyShard.fullyShard(net, FullyShardOptions.defaults().processGroup(group));
            Tensor x = Toy.input(rank, 0, 2, 2).requiresGrad(true);
            fsdp.forward(x).sum().backward();
            assertEquals(0, fsdp.parameters().size());
            assertTrue(fsdp.fullStateDict().isEmpty());
            fsdp.close();
            return null;
        });
    }

    @Test
    void closeTwice() throws Exception {
        Ranks.withGroups(2, T, (rank, group) -> {
            Toy net = nested(1);
            FSDPModule fsdp = ShapesTest.nestedSharder(FullyShardOptions.defaults()).shard(net, group);
            try (var sc = Tensors.scope()) {
                fsdp.forward(Toy.input(rank, 0, 5, 4)).backward();
            }
            fsdp.close();
            fsdp.close();
            return null;
        });
    }

    /** After closing the root, the nested units can be sharded again? FullyShard.of(child) */
    @Test
    void closeForgetsNested() throws Exception {
        Ranks.withGroups(2, T, (rank, group) -> {
            Toy net = nested(1);
            FSDPModule fsdp = ShapesTest.nestedSharder(FullyShardOptions.defaults()).shard(net, group);
            fsdp.close();
            assertNull(FullyShard.of(net), "root forgotten");
            assertNull(FullyShard.of(net.namedChildren().get("u1")), "nested u1 still registered after root close");
            return null;
        });
    }

    @Test
    void optimizerOverUnshardedParameters() throws Exception {
        Ranks.withGroups(2, T, (rank, group) -> {
            Toy net = lin(1);
            FSDPModule fsdp = FullyShard.fullyShard(net, FullyShardOptions.defaults().processGroup(group));
            Map<String, float[]> v0 = Toy.values(fsdp.fullStateDict());
            SGD opt = new SGD(net.parameters(), 0.1); // the careless choice
            String err = null;
            try (var sc = Tensors.scope()) {
                opt.zeroGrad();
                fsdp.forward(Toy.input(rank, 0, 5, 4)).backward();
                opt.step();
            } catch (RuntimeException e) {
                err = e.toString();
            }
            Map<String, float[]> v1 = Toy.values(fsdp.fullStateDict());
            boolean changed = !Toy.compare(v0, v1, 0f).isEmpty();
            fail("rank " + rank + ": optimizer over module.parameters(): error=" + err + ", parameters changed=" + changed
                    + ", grads=" + net.p("w").grad());
            return null;
        });
    }

    @Test
    void tiedAcrossUnits() throws Exception {
        Ranks.withGroups(2, T, (rank, group) -> {
            Toy u1 = new Toy(Toy.shapes("w", new long[] {4, 4}), 1, (m, x) -> x.matmul(m.p("w")));
            Toy u2 = new Toy(Toy.shapes(), 2, (m, x) -> x.matmul(m.p("w").transpose(0, 1)));
            u2.setParameter("w", u1.p("w"));
            Toy root = new Toy(Toy.shapes(), 3, (m, x) -> ((Toy) m.namedChildren().get("u2")).forward(((Toy) m.namedChildren().get("u1")).forward(x)).pow(2).mean());
            root.child("u1", u1);
            root.child("u2", u2);
            FullyShardOptions o = FullyShardOptions.defaults().processGroup(group);
            FullyShard.fullyShard(u1, o);
            FullyShard.fullyShard(u2, o); // README: refused
            FSDPModule fsdp = FullyShard.fullyShard(root, o);
            fail("tied weights across units were accepted; parameters=" + fsdp.parameters().size());
            return null;
        });
    }
}
