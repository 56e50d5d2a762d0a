package org.ddp4j.distributed.fsdp;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.ddp4j.distributed.ProcessGroup;
import org.ddp4j.nn.Linear;
import org.ddp4j.nn.Module;
import org.ddp4j.nn.functional.Functional;
import org.ddp4j.optim.AdamW;
import org.ddp4j.tensor.DType;
import org.ddp4j.tensor.Generator;
import org.ddp4j.tensor.Node;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;
import org.ddp4j.testing.ParameterValues;
import org.ddp4j.testing.Ranks;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * fully_shard under the uses a careless program makes (found by trying to break it): a parameter
 * read between backward and step, frozen and unused parameters, a backward that throws, an
 * evaluation with reshardAfterForward off, a partial load under bf16, dropping an accumulation,
 * ties across units and sharding a child after its parent. Each gives what training without
 * sharding gives, or a clear refusal.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class FullyShardMisuseTest {
    private static final Duration TIMEOUT = Duration.ofSeconds(60);

    /** Two Linear units and two root parameters, "unused" in no forward; backward throws once when armed. */
    static final class Toy extends Module {
        final Linear a;
        final Linear b;
        final Tensor unused;
        /** A 0-dim root parameter: the root's gradients complete only at the end of the backward (unused never arrives). */
        final Tensor scale;
        boolean failNextBackward;

        Toy() {
            Generator g = new Generator(4);
            a = registerModule("a", new Linear(6, 5, true, g));
            b = registerModule("b", new Linear(5, 3, true, g));
            unused = registerParameter("unused", Tensor.of(new float[] {0.5f, -0.5f, 0.25f, 1f}, 2, 2));
            scale = registerParameter("scale", Tensor.of(new float[] {1.5f}));
        }

        @Override
        public Tensor forward(Tensor x) {
            Tensor h = Functional.relu(a.forward(x));
            if (failNextBackward) {
                failNextBackward = false;
                h = new Node("ThrowsOnce", h) {
                    @Override
                    protected Tensor[] backward(Tensor gradOutput) {
                        throw new IllegalStateException("a backward that fails");
                    }
                }.attach(h.mul(1f));
            }
            return b.forward(h).mul(scale);
        }
    }

    static FSDPModule shard(Toy toy, ProcessGroup group, FullyShardOptions options) {
        FullyShardOptions o = options.processGroup(group);
        FullyShard.fullyShard(toy.a, o);
        FullyShard.fullyShard(toy.b, o);
        return FullyShard.fullyShard(toy, o);
    }

    static Tensor loss(FSDPModule fsdp, int rank, int step) {
        Generator data = new Generator(50L * step + rank);
        return fsdp.forward(Tensor.of(data.uniform(4 * 6, -1f, 1f), 4, 6)).pow(2).mean();
    }

    /** Three AdamW steps; {@code meddle} runs between each backward and step. */
    static float[] train(ProcessGroup group, int rank, Runnable[] meddle, Toy toy) {
        FSDPModule fsdp = shard(toy, group, FullyShardOptions.defaults());
        try (AdamW opt = new AdamW(fsdp.parameters(), AdamW.Options.defaults().lr(0.05).weightDecay(0.1))) {
            for (int step = 0; step < 3; step++) {
                try (var scope = Tensors.scope()) {
                    opt.zeroGrad();
                    loss(fsdp, rank, step).backward();
                    meddle[0].run();
                    opt.step();
                }
            }
            return ParameterValues.gathered(fsdp);
        } finally {
            fsdp.close();
        }
    }

    @Test
    void aParameterReadBetweenBackwardAndStepDoesNotServeOldValuesLater() throws Exception {
        Ranks.withGroups(2, TIMEOUT, (rank, group) -> {
            float[] plain = train(group, rank, new Runnable[] {() -> {}}, new Toy());
            Toy toy = new Toy();
            float[] read = train(group, rank, new Runnable[] {() -> toy.a.weight().toFloatArray()}, toy);
            assertArrayEquals(plain, read, "a read between backward and step changes nothing");
            return null;
        });
    }

    @Test
    void frozenAndUnusedParametersGetNoGradientAndDoNotMove() throws Exception {
        Ranks.withGroups(2, TIMEOUT, (rank, group) -> {
            Toy toy = new Toy();
            toy.b.bias().requiresGrad(false);
            float[] frozenBefore = toy.b.bias().toFloatArray();
            FSDPModule fsdp = shard(toy, group, FullyShardOptions.defaults());
            Map<String, Tensor> shards = fsdp.namedParameters();
            try (AdamW opt = new AdamW(fsdp.parameters(), AdamW.Options.defaults().lr(0.05).weightDecay(0.1))) {
                try (var scope = Tensors.scope()) {
                    loss(fsdp, rank, 0).backward();
                    assertNull(shards.get("b.bias").grad(), "a frozen parameter's shard gets no gradient");
                    assertNull(shards.get("unused").grad(), "a parameter no forward used gets no gradient");
                    assertTrue(shards.get("a.weight").grad() != null, "a used one does");
                    opt.step();
                }
            }
            Map<String, Tensor> after = fsdp.fullStateDict();
            assertArrayEquals(frozenBefore, after.get("b.bias").toFloatArray(), "the frozen bias did not move");
            assertArrayEquals(new float[] {0.5f, -0.5f, 0.25f, 1f}, after.get("unused").toFloatArray(),
                    "weight decay did not shrink the unused parameter");
            after.values().forEach(Tensor::close);
            fsdp.close();
            return null;
        });
    }

    @Test
    void aBackwardThatThrowsLeavesTheModelTrainingAsBefore() throws Exception {
        Ranks.withGroups(2, TIMEOUT, (rank, group) -> {
            float[] expected = train(group, rank, new Runnable[] {() -> {}}, new Toy());
            Toy toy = new Toy();
            FSDPModule fsdp = shard(toy, group, FullyShardOptions.defaults());
            float[] actual;
            try (AdamW opt = new AdamW(fsdp.parameters(), AdamW.Options.defaults().lr(0.05).weightDecay(0.1))) {
                for (int step = 0; step < 3; step++) {
                    if (step == 1) {
                        toy.failNextBackward = true;
                        try (var scope = Tensors.scope()) {
                            Tensor l = loss(fsdp, rank, 99);
                            assertThrows(IllegalStateException.class, l::backward);
                        }
                        opt.zeroGrad();
                    }
                    try (var scope = Tensors.scope()) {
                        opt.zeroGrad();
                        loss(fsdp, rank, step).backward();
                        opt.step();
                    }
                }
                actual = ParameterValues.gathered(fsdp);
            }
            fsdp.close();
            assertArrayEquals(expected, actual, "the steps after a failed backward are those of a run without it");
            return null;
        });
    }

    @Test
    void anEvaluationFreesEveryUnitEvenWithoutReshardAfterForward() throws Exception {
        Ranks.withGroups(2, TIMEOUT, (rank, group) -> {
            Toy toy = new Toy();
            FSDPModule fsdp = shard(toy, group, FullyShardOptions.defaults().reshardAfterForward(false));
            try (var scope = Tensors.scope(); var noGrad = Tensors.noGrad()) {
                loss(fsdp, rank, 0);
            }
            assertTrue(!toy.a.weight().hasStorage() && !toy.b.weight().hasStorage(), "no backward comes: every unit is freed");
            fsdp.close();
            return null;
        });
    }

    @Test
    void aPartialLoadUnderBf16LeavesTheOtherParametersExact() throws Exception {
        Ranks.withGroups(2, TIMEOUT, (rank, group) -> {
            Toy toy = new Toy();
            float[] weightBefore = toy.a.weight().toFloatArray();
            FSDPModule fsdp = shard(toy, group,
                    FullyShardOptions.defaults().mpPolicy(new MixedPrecisionPolicy(DType.BFLOAT16, null)));
            try (Tensor newBias = Tensor.zeros(3).keep()) {
                fsdp.loadStateDict(Map.of("b.bias", newBias), false);
            }
            Map<String, Tensor> after = fsdp.fullStateDict();
            assertArrayEquals(weightBefore, after.get("a.weight").toFloatArray(), "not rounded to bf16");
            assertArrayEquals(new float[3], after.get("b.bias").toFloatArray(), "the loaded one");
            after.values().forEach(Tensor::close);
            fsdp.close();
            return null;
        });
    }

    @Test
    void zeroGradDropsAnAccumulationSyncWasOffFor() throws Exception {
        Ranks.withGroups(2, TIMEOUT, (rank, group) -> {
            float[][] runs = new float[2][];
            for (int run = 0; run < 2; run++) {
                FSDPModule fsdp = shard(new Toy(), group, FullyShardOptions.defaults());
                try (AdamW opt = new AdamW(fsdp.parameters(), AdamW.Options.defaults().lr(0.05));
                        var scope = Tensors.scope()) {
                    if (run == 1) { // an accumulated micro-batch, then thrown away
                        fsdp.setRequiresGradientSync(false);
                        loss(fsdp, rank, 7).backward();
                        fsdp.zeroGrad();
                        fsdp.setRequiresGradientSync(true);
                    }
                    loss(fsdp, rank, 0).backward();
                    opt.step();
                }
                runs[run] = ParameterValues.gathered(fsdp);
                fsdp.close();
            }
            assertArrayEquals(runs[0], runs[1], "the dropped micro-batch left no trace");
            return null;
        });
    }

    @Test
    void tiesAcrossUnitsAndAChildShardedAfterItsParentAreRefused() throws Exception {
        Ranks.withGroups(2, TIMEOUT, (rank, group) -> {
            FullyShardOptions o = FullyShardOptions.defaults().processGroup(group);
            Toy shared = new Toy();
            Linear other = new Linear(6, 5, true, new Generator(1));
            other.setParameter("weight", shared.a.weight());
            FullyShard.fullyShard(shared.a, o);
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> FullyShard.fullyShard(other, o));
            assertTrue(e.getMessage().contains("weight") && e.getMessage().contains("in the unit of Linear already"),
                    e.getMessage());
            Toy parentFirst = new Toy();
            FSDPModule root = FullyShard.fullyShard(parentFirst, o);
            e = assertThrows(IllegalArgumentException.class, () -> FullyShard.fullyShard(parentFirst.a, o));
            assertTrue(e.getMessage().contains("apply fullyShard to inner modules before outer ones"), e.getMessage());
            root.close();
            assertEquals(null, FullyShard.of(parentFirst));
            assertNotEquals(null, FullyShard.of(shared.a));
            return null;
        });
    }
}
