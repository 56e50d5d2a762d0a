package org.ddp4j.optim;

import static org.ddp4j.testing.Assertions2.assertClose;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import org.ddp4j.nn.Linear;
import org.ddp4j.tensor.Generator;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;
import org.ddp4j.testing.Golden;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * OneCycleLR against PyTorch's (golden/one_cycle_lr.json, optim_golden.py's ONE_CYCLE_CASES): each
 * group's lr and momentum (SGD's momentum, Adam's first beta) after construction and after each of
 * total_steps steps, and the weights those steps give; a state dict that resumes the schedule;
 * stepping past the end and bad arguments refused by name.
 */
class OneCycleLRGoldenTest {
    /** The case's optimizer over [weight, bias] and its schedule, as the script builds them. */
    private static OneCycleLR scheduleFor(String name, Linear lin) {
        List<Tensor> both = List.of(lin.weight(), lin.bias());
        return switch (name) {
            case "sgd_defaults" -> new OneCycleLR(new SGD(both, SGD.Options.defaults().lr(0.5).momentum(0.9)), 0.1, 20);
            case "sgd_two_groups_linear_three_phase" -> new OneCycleLR(
                    new SGD(List.of(Map.of("params", List.of(lin.weight())), Map.of("params", List.of(lin.bias()), "lr", 0.2)),
                            SGD.Options.defaults().lr(0.1)),
                    List.of(0.4, 0.05), 17, OneCycleLR.Options.defaults().pctStart(0.25)
                            .annealStrategy(OneCycleLR.AnnealStrategy.LINEAR).threePhase(true).divFactor(10).finalDivFactor(100)
                            .baseMomentum(0.8).maxMomentum(0.9));
            case "adam_betas" -> new OneCycleLR(new Adam(both, Adam.Options.defaults().lr(0.001).betas(0.9, 0.98)), 0.01, 9);
            case "adamw_no_cycle_momentum" -> new OneCycleLR(new AdamW(both), List.of(0.003), 6,
                    OneCycleLR.Options.defaults().cycleMomentum(false).pctStart(0.5));
            case "one_step" -> new OneCycleLR(new SGD(both, SGD.Options.defaults().lr(0.1).momentum(0.5)), 0.2, 1);
            default -> throw new IllegalArgumentException(name);
        };
    }

    private static double momentum(ParamGroup g) {
        return g.options().containsKey("betas") ? ((Number) ((List<?>) g.get("betas")).get(0)).doubleValue() : g.number("momentum");
    }

    @ParameterizedTest
    @ValueSource(strings = {"sgd_defaults", "sgd_two_groups_linear_three_phase", "adam_betas", "adamw_no_cycle_momentum",
            "one_step"})
    void lrMomentumAndWeightsMatchPyTorch(String name) {
        Golden g = Golden.load("one_cycle_lr");
        double[] lrs = g.doubles(name + ".lrs");
        double[] momenta = g.doubles(name + ".momenta");
        try (var scope = Tensors.scope(); Linear lin = new Linear(4, 3, true, new Generator(0))) {
            lin.weight().copyFrom(g.tensor("w0"));
            lin.bias().copyFrom(g.tensor("b0"));
            OneCycleLR schedule = scheduleFor(name, lin);
            Optimizer opt = schedule.optimizer();
            int groups = (int) g.number(name + ".groups");
            assertEquals(groups, opt.paramGroups().size());
            int steps = lrs.length / groups - 1;
            assertEquals(steps, schedule.totalSteps());
            for (int t = 0; t <= steps; t++) {
                if (t > 0) {
                    try (var stepScope = Tensors.scope()) {
                        opt.zeroGrad();
                        Tensor y = lin.forward(g.tensor("x"));
                        y.mul(y).mean().backward();
                        opt.step();
                    }
                    schedule.step();
                }
                for (int gi = 0; gi < groups; gi++) {
                    ParamGroup group = opt.paramGroups().get(gi);
                    // the step past the end holds the end value (the previous step's) where PyTorch extrapolates
                    int row = t == steps ? t - 1 : t;
                    double lr = lrs[groups * row + gi];
                    assertEquals(lr, group.lr(), Math.abs(lr) * 1e-12, name + " group " + gi + " lr at step " + t);
                    assertEquals(lr, schedule.getLastLr().get(gi), Math.abs(lr) * 1e-12, name + " get_last_lr at step " + t);
                    assertEquals(momenta[groups * row + gi], momentum(group), 1e-12,
                            name + " group " + gi + " momentum at step " + t);
                }
            }
            assertClose(g.floats(name + ".weight"), lin.weight().toFloatArray(), 1e-5, 1e-6, name + " weight after the run");
            IllegalStateException past = assertThrows(IllegalStateException.class, schedule::step);
            assertTrue(past.getMessage().contains("tried to step " + (steps + 2) + " times. The specified number of total"
                    + " steps is " + steps), past.getMessage());
            assertEquals(lrs[groups * (steps - 1)], opt.paramGroups().get(0).lr(),
                    "a refused step changes nothing");
            opt.close();
        }
    }

    @Test
    void aLoadedStateDictContinuesTheSchedule() {
        double[] lrs = Golden.load("one_cycle_lr").doubles("sgd_defaults.lrs");
        try (var scope = Tensors.scope(); Linear first = new Linear(4, 3, true, new Generator(0));
             Linear second = new Linear(4, 3, true, new Generator(0))) {
            OneCycleLR a = scheduleFor("sgd_defaults", first);
            for (int t = 1; t <= 7; t++) {
                a.step();
            }
            OneCycleLR b = scheduleFor("sgd_defaults", second);
            b.loadStateDict(a.stateDict());
            b.optimizer().paramGroups().get(0).setLr(a.optimizer().paramGroups().get(0).lr());
            for (int t = 8; t <= 20; t++) {
                b.step();
                double expected = lrs[t == 20 ? 19 : t];
                assertEquals(expected, b.getLastLr().get(0), expected * 1e-12, "lr at step " + t + " after loading");
            }
            IllegalArgumentException bad = assertThrows(IllegalArgumentException.class,
                    () -> b.loadStateDict(new StepLR(new SGD(List.of(Tensor.zeros(1).requiresGrad(true)), 0.1), 1).stateDict()));
            assertTrue(bad.getMessage().contains("another scheduler"), bad.getMessage());
            a.optimizer().close();
            b.optimizer().close();
        }
    }

    @Test
    void badArgumentsAreRefusedByName() {
        try (var scope = Tensors.scope(); Linear lin = new Linear(4, 3, true, new Generator(0))) {
            List<Tensor> both = List.of(lin.weight(), lin.bias());
            IllegalArgumentException steps = assertThrows(IllegalArgumentException.class,
                    () -> new OneCycleLR(new SGD(both, 0.1), 0.1, 0));
            assertTrue(steps.getMessage().contains("total_steps must be a positive number"), steps.getMessage());
            IllegalArgumentException pct = assertThrows(IllegalArgumentException.class,
                    () -> OneCycleLR.Options.defaults().pctStart(1.5));
            assertTrue(pct.getMessage().contains("pct_start"), pct.getMessage());
            IllegalArgumentException lrs = assertThrows(IllegalArgumentException.class,
                    () -> new OneCycleLR(new SGD(both, 0.1), List.of(0.1, 0.2, 0.3), 10, OneCycleLR.Options.defaults()));
            assertTrue(lrs.getMessage().contains("expected 1 values for max_lr"), lrs.getMessage());
        }
    }
}
