package org.ddp4j.optim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;
import org.ddp4j.testing.Golden;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * StepLR, MultiStepLR, CosineAnnealingLR and LinearLR: get_last_lr() after construction and after
 * each step against PyTorch's (golden/lr_schedulers.json, SGD with lr 0.1), state dicts that
 * resume a schedule, and refused arguments.
 */
class LRSchedulerGoldenTest {
    /** The same schedulers as optim_golden.py's SCHEDULERS. */
    private static final Map<String, Function<Optimizer, LRScheduler>> SCHEDULERS = Map.of(
            "step_lr", o -> new StepLR(o, 3, 0.5),
            "step_lr_default_gamma", o -> new StepLR(o, 2),
            "multi_step_lr", o -> new MultiStepLR(o, List.of(5, 2, 8, 5), 0.3),
            "cosine", o -> new CosineAnnealingLR(o, 10),
            "cosine_eta_min_periodic", o -> new CosineAnnealingLR(o, 4, 0.001),
            "linear_lr_default", LinearLR::new,
            "linear_lr", o -> new LinearLR(o, 0.1, 0.9, 4));

    @ParameterizedTest
    @ValueSource(strings = {"step_lr", "step_lr_default_gamma", "multi_step_lr", "cosine", "cosine_eta_min_periodic",
            "linear_lr_default", "linear_lr"})
    void lrSequenceMatchesPyTorch(String name) {
        Golden g = Golden.load("lr_schedulers");
        double[] expected = g.doubles(name + ".lrs");
        try (var scope = Tensors.scope(); SGD opt = new SGD(List.of(Tensor.zeros(1).requiresGrad(true)), g.number("base_lr"))) {
            LRScheduler scheduler = SCHEDULERS.get(name).apply(opt);
            List<Double> actual = new ArrayList<>(scheduler.getLastLr());
            for (int i = 1; i < expected.length; i++) {
                opt.step();
                scheduler.step();
                actual.add(scheduler.getLastLr().get(0));
            }
            for (int i = 0; i < expected.length; i++) {
                assertEquals(expected[i], actual.get(i), Math.abs(expected[i]) * 1e-12, name + " lr at epoch " + i + ": " + actual);
            }
            assertEquals((int) g.number(name + ".last_epoch"), scheduler.lastEpoch());
            assertEquals(g.number(name + ".optimizer_lr"), opt.lr(), Math.abs(opt.lr()) * 1e-12);
            assertEquals(g.number("base_lr"), scheduler.baseLr());
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"step_lr", "multi_step_lr", "cosine_eta_min_periodic", "linear_lr"})
    void aLoadedStateDictContinuesTheSchedule(String name) {
        try (var scope = Tensors.scope(); SGD opt = new SGD(List.of(Tensor.zeros(1).requiresGrad(true)), 0.1);
                SGD resumed = new SGD(List.of(Tensor.zeros(1).requiresGrad(true)), 0.1)) {
            LRScheduler scheduler = SCHEDULERS.get(name).apply(opt);
            for (int i = 0; i < 3; i++) {
                scheduler.step();
            }
            Map<String, Object> state = scheduler.stateDict();
            assertEquals(3, state.get("last_epoch"));
            assertEquals(List.of(0.1), state.get("base_lrs"));
            LRScheduler other = SCHEDULERS.get(name).apply(resumed);
            other.loadStateDict(state);
            resumed.setLr(opt.lr()); // as loading the optimizer's state dict would
            assertEquals(state, other.stateDict());
            for (int i = 0; i < 6; i++) {
                scheduler.step();
                other.step();
                assertEquals(scheduler.getLastLr(), other.getLastLr(), name + " step " + i);
            }
        }
    }

    @Test
    void badArgumentsAreRefused() {
        try (var scope = Tensors.scope(); SGD opt = new SGD(List.of(Tensor.zeros(1).requiresGrad(true)), 0.1)) {
            assertEquals("StepLR: step_size must be at least 1, got 0",
                    assertThrows(IllegalArgumentException.class, () -> new StepLR(opt, 0)).getMessage());
            assertEquals("CosineAnnealingLR: T_max must be at least 1, got 0",
                    assertThrows(IllegalArgumentException.class, () -> new CosineAnnealingLR(opt, 0)).getMessage());
            assertEquals("LinearLR: start_factor must be in (0, 1], got 0.0",
                    assertThrows(IllegalArgumentException.class, () -> new LinearLR(opt, 0, 1, 5)).getMessage());
            assertEquals("LinearLR: end_factor must be in [0, 1], got 1.5",
                    assertThrows(IllegalArgumentException.class, () -> new LinearLR(opt, 0.5, 1.5, 5)).getMessage());
            assertEquals(0.1, opt.lr(), "a refused scheduler changed the lr");
            StepLR step = new StepLR(opt, 2);
            String message = assertThrows(IllegalArgumentException.class,
                    () -> step.loadStateDict(Map.of("last_epoch", 1))).getMessage();
            assertTrue(message.startsWith("StepLR.loadStateDict: the state dict has no number '_step_count'"), message);
        }
    }
}
