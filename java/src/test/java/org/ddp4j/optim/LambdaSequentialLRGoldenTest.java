package org.ddp4j.optim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import java.util.function.IntToDoubleFunction;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;
import org.ddp4j.testing.Golden;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * LambdaLR and SequentialLR against PyTorch (golden/lr_lambda_sequential.json, scripts/golden/lr_lambda_sequential_golden.py):
 * get_last_lr() of two parameter groups (lr 0.1 and 0.03) after construction and each of 30 steps, nanoGPT's schedule
 * as a lambda, warm-up + cosine as SequentialLR; state dicts that resume the schedule.
 */
class LambdaSequentialLRGoldenTest {
    private static final int WARMUP = 5;
    private static final int DECAY = 25;
    private static final double MIN_RATIO = 0.1;

    /** nanoGPT's get_lr(it) / learning_rate, in the script's order of operations. */
    static double nanoGptFactor(int it) {
        if (it < WARMUP) {
            return (it + 1) / (double) (WARMUP + 1);
        }
        if (it > DECAY) {
            return MIN_RATIO;
        }
        double decayRatio = (it - WARMUP) / (double) (DECAY - WARMUP);
        double coeff = 0.5 * (1.0 + Math.cos(Math.PI * decayRatio));
        return MIN_RATIO + coeff * (1.0 - MIN_RATIO);
    }

    private static final Map<String, Function<Optimizer, LRScheduler>> CASES = Map.of(
            "lambda_nanogpt", o -> new LambdaLR(o, LambdaSequentialLRGoldenTest::nanoGptFactor),
            "lambda_per_group", o -> new LambdaLR(o, List.<IntToDoubleFunction>of(LambdaSequentialLRGoldenTest::nanoGptFactor,
                    e -> Math.pow(0.95, e))),
            "sequential_warmup_cosine", o -> new SequentialLR(o, List.of(new LinearLR(o, 0.01, 1.0, WARMUP),
                    new CosineAnnealingLR(o, DECAY, 0.001)), new int[] {WARMUP}),
            "sequential_three", o -> new SequentialLR(o, List.of(new LinearLR(o, 0.1, 1.0, 3), new StepLR(o, 3, 0.5),
                    new CosineAnnealingLR(o, 6)), new int[] {4, 12}));

    private static SGD twoGroups() {
        List<Map<String, ?>> groups = List.of(Map.of("params", List.of(Tensor.zeros(2).requiresGrad(true))),
                Map.of("params", List.of(Tensor.zeros(1).requiresGrad(true)), "lr", 0.03));
        return new SGD(groups, SGD.Options.defaults().lr(0.1));
    }

    @ParameterizedTest
    @ValueSource(strings = {"lambda_nanogpt", "lambda_per_group", "sequential_warmup_cosine", "sequential_three"})
    void lrSequenceOfBothGroupsMatchesPyTorch(String name) {
        Golden g = Golden.load("lr_lambda_sequential");
        double[][] expected = {g.doubles(name + ".lrs0"), g.doubles(name + ".lrs1")};
        try (var scope = Tensors.scope(); SGD opt = twoGroups()) {
            LRScheduler scheduler = CASES.get(name).apply(opt);
            List<List<Double>> actual = new ArrayList<>(List.of(scheduler.getLastLr()));
            for (int i = 1; i < expected[0].length; i++) {
                opt.step();
                scheduler.step();
                actual.add(scheduler.getLastLr());
            }
            for (int group = 0; group < 2; group++) {
                for (int i = 0; i < expected[group].length; i++) {
                    assertEquals(expected[group][i], actual.get(i).get(group), Math.abs(expected[group][i]) * 1e-12,
                            name + " group " + group + " lr at epoch " + i + ": " + actual);
                }
                assertEquals(g.number(name + ".optimizer_lr" + group), opt.paramGroups().get(group).lr(),
                        Math.abs(opt.paramGroups().get(group).lr()) * 1e-12);
            }
            assertEquals((int) g.number(name + ".last_epoch"), scheduler.lastEpoch());
            assertEquals(List.of(0.1, 0.03), scheduler.baseLrs(), "the initial lrs, not the first part's warm-up lr");
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"lambda_nanogpt", "sequential_warmup_cosine", "sequential_three"})
    void aStateDictThroughJsonResumesTheSchedule(String name) throws Exception {
        try (var scope = Tensors.scope(); SGD opt = twoGroups(); SGD resumed = twoGroups()) {
            LRScheduler scheduler = CASES.get(name).apply(opt);
            for (int i = 0; i < 11; i++) {
                scheduler.step();
            }
            ObjectMapper json = new ObjectMapper();
            @SuppressWarnings("unchecked")
            Map<String, Object> state = json.readValue(json.writeValueAsString(scheduler.stateDict()), Map.class);
            assertEquals(11, state.get("last_epoch"));
            LRScheduler other = CASES.get(name).apply(resumed);
            other.loadStateDict(state);
            for (int group = 0; group < 2; group++) { // as loading the optimizer's state dict would
                resumed.paramGroups().get(group).setLr(opt.paramGroups().get(group).lr());
            }
            assertEquals(scheduler.getLastLr(), other.getLastLr());
            for (int i = 0; i < 19; i++) {
                scheduler.step();
                other.step();
                assertEquals(scheduler.getLastLr(), other.getLastLr(), name + " step " + (12 + i));
            }
        }
    }

    @Test
    void sequentialStateDictHasPyTorchsKeys() {
        try (var scope = Tensors.scope(); SGD opt = twoGroups()) {
            LRScheduler scheduler = CASES.get("sequential_warmup_cosine").apply(opt);
            Map<String, Object> state = scheduler.stateDict();
            assertEquals(List.of("_milestones", "last_epoch", "_last_lr", "_schedulers"), List.copyOf(state.keySet()));
            assertEquals(List.of(WARMUP), state.get("_milestones"));
            assertEquals(2, ((List<?>) state.get("_schedulers")).size());
        }
    }

    @Test
    void badArgumentsAreNamed() {
        try (var scope = Tensors.scope(); SGD opt = twoGroups(); SGD other = twoGroups()) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> new LambdaLR(opt, List.<IntToDoubleFunction>of(x -> 1.0)));
            assertTrue(e.getMessage().contains("expected 2 lr_lambdas"), e.getMessage());
            e = assertThrows(IllegalArgumentException.class, () -> new LambdaLR(opt, x -> x == 0 ? 1.0 : -1.0).step());
            assertTrue(e.getMessage().contains("gave -1.0 at epoch 1"), e.getMessage());
            LinearLR warm = new LinearLR(opt, 0.1, 1.0, 3);
            CosineAnnealingLR cosine = new CosineAnnealingLR(opt, 10);
            e = assertThrows(IllegalArgumentException.class, () -> new SequentialLR(opt, List.of(warm, cosine), new int[0]));
            assertTrue(e.getMessage().contains("number of schedulers 2"), e.getMessage());
            CosineAnnealingLR foreign = new CosineAnnealingLR(other, 10);
            e = assertThrows(IllegalArgumentException.class,
                    () -> new SequentialLR(opt, List.of(warm, foreign), new int[] {3}));
            assertTrue(e.getMessage().contains("index 1"), e.getMessage());
        }
    }

    @Test
    void laterSchedulersOnAnOptimizerStartFromItsInitialLr() {
        // PyTorch's group["initial_lr"]: the cosine made after a warm-up anneals from 0.1, not from the warm-up's 0.001.
        try (var scope = Tensors.scope(); SGD opt = new SGD(List.of(Tensor.zeros(1).requiresGrad(true)), 0.1)) {
            new LinearLR(opt, 0.01, 1.0, 5);
            assertEquals(0.001, opt.lr(), 1e-15);
            CosineAnnealingLR cosine = new CosineAnnealingLR(opt, 10);
            assertEquals(List.of(0.1), cosine.baseLrs());
        }
    }
}
