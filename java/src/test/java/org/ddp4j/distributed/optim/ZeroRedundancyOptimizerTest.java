package org.ddp4j.distributed.optim;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.ddp4j.amp.GradScaler;
import org.ddp4j.distributed.ProcessGroup;
import org.ddp4j.distributed.ProcessGroupGloo;
import org.ddp4j.distributed.store.HashStore;
import org.ddp4j.nn.Linear;
import org.ddp4j.nn.Module;
import org.ddp4j.nn.functional.Functional;
import org.ddp4j.nn.parallel.DistributedDataParallel;
import org.ddp4j.nn.utils.ClipGradNorm;
import org.ddp4j.optim.AdamW;
import org.ddp4j.optim.Optimizer;
import org.ddp4j.optim.OptimizerStateDict;
import org.ddp4j.optim.SGD;
import org.ddp4j.optim.StepLR;
import org.ddp4j.tensor.Generator;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;
import org.ddp4j.testing.ParameterValues;
import org.ddp4j.testing.Ranks;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * ZeroRedundancyOptimizer against the optimizer it wraps: on 2 and 3 ranks (threads, Gloo and
 * shared memory), DDP + ZeRO(AdamW) ends every step with the bits of DDP + AdamW (two parameter
 * groups, gradient clipping, StepLR); each rank keeps state for its own parameters only; the
 * consolidated state dict equals AdamW's; a state consolidated at 3 ranks resumes at 2 exactly.
 */
class ZeroRedundancyOptimizerTest {
    private static final Duration TIMEOUT = Duration.ofSeconds(60);
    private static final int STEPS = 5;

    /** Two linear layers, weights and biases of four sizes. */
    static final class Net extends Module {
        final Linear fc1;
        final Linear fc2;

        Net() {
            Generator g = new Generator(11);
            fc1 = registerModule("fc1", new Linear(6, 16, true, g));
            fc2 = registerModule("fc2", new Linear(16, 3, true, g));
        }

        @Override
        public Tensor forward(Tensor x) {
            return fc2.forward(Functional.relu(fc1.forward(x)));
        }

        /** Weights decay, biases do not (nanoGPT's groups). */
        List<Map<String, ?>> groups() {
            return List.of(Map.of("params", List.of(fc1.weight(), fc2.weight())),
                    Map.of("params", List.of(fc1.bias(), fc2.bias()), "weight_decay", 0.0));
        }
    }

    private static AdamW adamW(List<? extends Map<String, ?>> groups) {
        return new AdamW(groups, AdamW.Options.defaults().lr(0.05).weightDecay(0.1));
    }

    /** One training step on this rank's batch of the step: clip to 0.5, step, schedule. */
    private static void train(DistributedDataParallel model, Optimizer opt, StepLR schedule, int rank, int step) {
        try (var scope = Tensors.scope()) {
            opt.zeroGrad();
            Generator data = new Generator(1000L * step + rank);
            Tensor x = Tensor.of(data.uniform(4 * 6, -1f, 1f), 4, 6);
            Tensor y = Tensor.of(data.uniform(4 * 3, -1f, 1f), 4, 3);
            model.forward(x).sub(y).pow(2).mean().backward();
            ClipGradNorm.clipGradNorm(model.parameters(), 0.5);
            opt.step();
            schedule.step();
        }
    }

    /** Makes the optimizer under test from parameter groups: AdamW or SGD here. */
    interface OptimizerClass {
        Optimizer make(List<? extends Map<String, ?>> groups);
    }

    /**
     * One rank's DDP + an optimizer beside DDP + ZeroRedundancyOptimizer over the same class, from
     * the same weights (or the weights given), trained side by side.
     */
    static final class SideBySide implements AutoCloseable {
        final Net plainNet = new Net();
        final Net zeroNet = new Net();
        final DistributedDataParallel plain;
        final DistributedDataParallel zero;
        final Optimizer plainOpt;
        final ZeroRedundancyOptimizer zeroOpt;

        SideBySide(ProcessGroup group, OptimizerClass optimizerClass, Map<String, Tensor> weights) {
            if (weights != null) {
                plainNet.loadStateDict(weights);
                zeroNet.loadStateDict(weights);
            }
            plain = new DistributedDataParallel(plainNet, group, DistributedDataParallel.DEFAULT_BUCKET_CAP_BYTES);
            zero = new DistributedDataParallel(zeroNet, group, DistributedDataParallel.DEFAULT_BUCKET_CAP_BYTES);
            plainOpt = optimizerClass.make(plainNet.groups());
            zeroOpt = new ZeroRedundancyOptimizer(zeroNet.groups(), optimizerClass::make, group);
        }

        SideBySide(ProcessGroup group, OptimizerClass optimizerClass) {
            this(group, optimizerClass, null);
        }

        void assertSameParameters(String what) {
            assertArrayEquals(ParameterValues.of(plainNet), ParameterValues.of(zeroNet), what);
        }

        @Override
        public void close() {
            zeroOpt.close();
            plainOpt.close();
            zero.close();
            plain.close();
            zeroNet.close();
            plainNet.close();
        }
    }

    private static void assertSameState(OptimizerStateDict expected, OptimizerStateDict actual) {
        assertEquals(expected.optimizer(), actual.optimizer());
        assertEquals(expected.paramGroups(), actual.paramGroups());
        assertEquals(expected.state().keySet(), actual.state().keySet());
        expected.state().forEach((index, entries) -> {
            assertEquals(entries.keySet(), actual.state().get(index).keySet(), "state names of parameter " + index);
            entries.forEach((name, t) -> assertArrayEquals(t.toFloatArray(), actual.state().get(index).get(name).toFloatArray(),
                    name + " of parameter " + index));
        });
    }

    private static SGD sgd(List<? extends Map<String, ?>> groups) {
        return new SGD(groups, SGD.Options.defaults().lr(0.1).momentum(0.9).nesterov(true).weightDecay(0.01));
    }

    @Test
    void wrapsSgdWithMomentumToo() throws Exception {
        Ranks.withGroups(2, TIMEOUT, (rank, group) -> {
            try (SideBySide s = new SideBySide(group, ZeroRedundancyOptimizerTest::sgd)) {
                StepLR plainSchedule = new StepLR(s.plainOpt, 2, 0.5);
                StepLR zeroSchedule = new StepLR(s.zeroOpt, 2, 0.5);
                for (int step = 0; step < STEPS; step++) {
                    train(s.plain, s.plainOpt, plainSchedule, rank, step);
                    train(s.zero, s.zeroOpt, zeroSchedule, rank, step);
                    s.assertSameParameters("parameters after step " + step + " on rank " + rank);
                }
                s.zeroOpt.consolidateStateDict(1);
                if (rank == 1) {
                    assertSameState(s.plainOpt.stateDict(), s.zeroOpt.stateDict());
                }
                return null;
            }
        });
    }

    /** One step through a GradScaler; at step 2 the loss is scaled to infinity, so both skip it. */
    private static void trainScaled(DistributedDataParallel model, Optimizer opt, GradScaler scaler, int rank, int step) {
        try (var scope = Tensors.scope()) {
            opt.zeroGrad();
            Generator data = new Generator(1000L * step + rank);
            Tensor x = Tensor.of(data.uniform(4 * 6, -1f, 1f), 4, 6);
            Tensor loss = model.forward(x).pow(2).mean();
            scaler.scale(step == 2 ? loss.mul(Float.MAX_VALUE) : loss).backward();
            scaler.step(opt);
            scaler.update();
        }
    }

    @Test
    void aGradScalerStepsItAsTheWrappedOptimizer() throws Exception {
        Ranks.withGroups(2, TIMEOUT, (rank, group) -> {
            try (SideBySide s = new SideBySide(group, ZeroRedundancyOptimizerTest::adamW)) {
                GradScaler plainScaler = new GradScaler();
                GradScaler zeroScaler = new GradScaler();
                for (int step = 0; step < 4; step++) {
                    float[] before = ParameterValues.of(s.zeroNet);
                    trainScaled(s.plain, s.plainOpt, plainScaler, rank, step);
                    trainScaled(s.zero, s.zeroOpt, zeroScaler, rank, step);
                    s.assertSameParameters("parameters after step " + step + " on rank " + rank);
                    if (step == 2) {
                        assertArrayEquals(before, ParameterValues.of(s.zeroNet), "the step with infinite gradients is skipped");
                    }
                }
                assertEquals(plainScaler.getScale(), zeroScaler.getScale());
                return null;
            }
        });
    }

    @ParameterizedTest
    @ValueSource(ints = {2, 3})
    void stepsEqualTheWrappedOptimizerBitForBit(int world) throws Exception {
        Ranks.withGroups(world, TIMEOUT, (rank, group) -> {
            try (SideBySide s = new SideBySide(group, ZeroRedundancyOptimizerTest::adamW)) {
                StepLR plainSchedule = new StepLR(s.plainOpt, 2, 0.5);
                StepLR zeroSchedule = new StepLR(s.zeroOpt, 2, 0.5);
                for (int step = 0; step < STEPS; step++) {
                    train(s.plain, s.plainOpt, plainSchedule, rank, step);
                    train(s.zero, s.zeroOpt, zeroSchedule, rank, step);
                    s.assertSameParameters("parameters after step " + step + " on rank " + rank);
                }
                // This rank keeps the state of the parameters it owns, and only theirs.
                OptimizerStateDict local = s.zeroOpt.localOptimizer().stateDict();
                long owned = s.zeroNet.parameters().stream().filter(p -> s.zeroOpt.ownerOf(p) == rank).count();
                assertEquals(owned, local.state().size());
                assertTrue(owned < s.zeroNet.parameters().size(), "rank " + rank + " owns every parameter");
                // The consolidated state is AdamW's, on rank 0 alone.
                s.zeroOpt.consolidateStateDict(0);
                if (rank == 0) {
                    assertSameState(s.plainOpt.stateDict(), s.zeroOpt.stateDict());
                } else {
                    IllegalStateException e = assertThrows(IllegalStateException.class, s.zeroOpt::stateDict);
                    assertTrue(e.getMessage().contains("consolidateStateDict(" + rank + ") on every rank"), e.getMessage());
                }
                return null;
            }
        });
    }

    @Test
    void aStateConsolidatedAtThreeRanksResumesAtTwoExactly() throws Exception {
        // 3 ranks train 3 steps; rank 0 keeps the parameters and the consolidated state.
        List<Object[]> saved = Ranks.withGroups(3, TIMEOUT, (rank, group) -> {
            try (Net net = new Net();
                    DistributedDataParallel model = new DistributedDataParallel(net, group,
                            DistributedDataParallel.DEFAULT_BUCKET_CAP_BYTES);
                    ZeroRedundancyOptimizer opt = new ZeroRedundancyOptimizer(net.groups(),
                            ZeroRedundancyOptimizerTest::adamW, group)) {
                StepLR schedule = new StepLR(opt, 2, 0.5);
                for (int step = 0; step < 3; step++) {
                    train(model, opt, schedule, rank, step);
                }
                opt.consolidateStateDict(0);
                if (rank != 0) {
                    return null;
                }
                // Copies: the state dict's tensors are the optimizer's, freed when it closes.
                Map<Integer, Map<String, Tensor>> copies = new LinkedHashMap<>();
                opt.stateDict().state().forEach((index, entries) -> {
                    Map<String, Tensor> copy = new LinkedHashMap<>();
                    entries.forEach((name, t) -> copy.put(name, t.zerosLike().keep().copyFrom(t)));
                    copies.put(index, copy);
                });
                OptimizerStateDict state = new OptimizerStateDict(opt.stateDict().optimizer(), copies,
                        opt.stateDict().paramGroups());
                Map<String, Tensor> params = new LinkedHashMap<>();
                net.namedParameters().forEach((name, p) -> params.put(name, p.zerosLike().keep().copyFrom(p)));
                return new Object[] {state, params};
            }
        });
        OptimizerStateDict state = (OptimizerStateDict) saved.get(0)[0];
        @SuppressWarnings("unchecked")
        Map<String, Tensor> params = (Map<String, Tensor>) saved.get(0)[1];
        // 2 ranks resume: ZeRO and plain AdamW load the same state and take 2 more steps.
        Ranks.withGroups(2, TIMEOUT, (rank, group) -> {
            try (SideBySide s = new SideBySide(group, ZeroRedundancyOptimizerTest::adamW, params)) {
                s.plainOpt.loadStateDict(state);
                s.zeroOpt.loadStateDict(state);
                StepLR plainSchedule = new StepLR(s.plainOpt, 2, 0.5);
                StepLR zeroSchedule = new StepLR(s.zeroOpt, 2, 0.5);
                for (int step = 3; step < 5; step++) {
                    train(s.plain, s.plainOpt, plainSchedule, rank, step);
                    train(s.zero, s.zeroOpt, zeroSchedule, rank, step);
                    s.assertSameParameters("parameters after step " + step);
                }
                s.zeroOpt.consolidateStateDict(1);
                if (rank == 1) {
                    assertSameState(s.plainOpt.stateDict(), s.zeroOpt.stateDict());
                }
                return null;
            }
        });
    }

    @Test
    void partitionIsPyTorchsLargestFirstToTheLightestRank() throws Exception {
        // sizes 100, 10, 60, 40: 100 -> rank 0; 60 -> 1; 40 -> 1 (60 < 100); 10 -> 0 (a tie at 100: the lowest rank)
        List<Tensor> params = List.of(Tensor.zeros(100), Tensor.zeros(10), Tensor.zeros(60), Tensor.zeros(40));
        params.forEach(p -> p.requiresGrad(true));
        try (AdamW all = adamW(List.of(Map.of("params", params)))) {
            assertArrayEquals(new int[] {0, 0, 1, 1}, ZeroRedundancyOptimizer.partition(all.paramGroups(), 2));
            assertArrayEquals(new int[] {0, 2, 1, 2}, ZeroRedundancyOptimizer.partition(all.paramGroups(), 3));
        }
    }

    @Test
    void aRankWithoutParametersIsRefusedByName() throws Exception {
        HashStore store = new HashStore(Duration.ofSeconds(20));
        List<Ranks.Outcome<Object>> outcomes = Ranks.collect(3, rank -> {
            List<Tensor> params = List.of(Tensor.zeros(4), Tensor.zeros(2));
            params.forEach(p -> p.requiresGrad(true));
            try (ProcessGroup group = new ProcessGroupGloo(store, rank, 3, TIMEOUT, "127.0.0.1");
                    ZeroRedundancyOptimizer opt = new ZeroRedundancyOptimizer(List.of(Map.of("params", params)),
                            ZeroRedundancyOptimizerTest::adamW, group)) {
                return opt.toString();
            }
        });
        assertTrue(outcomes.get(0).error() == null && outcomes.get(1).error() == null, outcomes.toString());
        Throwable e = outcomes.get(2).error();
        assertTrue(e instanceof IllegalArgumentException, String.valueOf(e));
        assertEquals("ZeroRedundancyOptimizer: rank 2 of 3 owns no parameter (2 parameters for 3 ranks): use at most 2"
                + " ranks, or a plain optimizer", e.getMessage());
    }
}
