package org.ddp4j.optim;

import static org.ddp4j.testing.Assertions2.assertClose;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.ddp4j.nn.Linear;
import org.ddp4j.nn.MSELoss;
import org.ddp4j.tensor.Generator;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;
import org.ddp4j.testing.Golden;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Two parameter groups (a Linear's weight with the constructor's options; its bias with its own
 * lr and weight_decay) for SGD with momentum, Adam and AdamW, and a scheduler stepping both
 * groups' lr, five steps against PyTorch (golden/param_groups.json, optim_golden.py): the
 * parameters and each group's lr after every step, and stateDict() against PyTorch's
 * {@code optimizer.state_dict()}.
 */
class ParamGroupsGoldenTest {
    /** Keys PyTorch's groups have that ddp4j's do not: implementation switches, and the schedulers' initial_lr. */
    private static final Set<String> PYTORCH_ONLY = Set.of("foreach", "differentiable", "capturable", "fused",
            "initial_lr", "maximize");

    @SuppressWarnings("unchecked")
    private static Map<String, Object> map(Golden g, String key) {
        return (Map<String, Object>) g.json(key);
    }

    /** The case's optimizer over [{params: [weight]}, {params: [bias], ...bias_options}], as the script builds it. */
    static Optimizer optimizerFor(Golden g, String name, Linear model) {
        Map<String, Object> defaults = map(g, name + ".defaults");
        Map<String, Object> biasGroup = new LinkedHashMap<>(map(g, name + ".bias_options"));
        biasGroup.put("params", List.of(model.bias()));
        List<Map<String, ?>> groups = List.of(Map.of("params", List.of(model.weight())), biasGroup);
        double lr = ((Number) defaults.get("lr")).doubleValue();
        return switch (g.text(name + ".optimizer")) {
            case "SGD" -> new SGD(groups, SGD.Options.defaults().lr(lr)
                    .momentum(((Number) defaults.get("momentum")).doubleValue())
                    .weightDecay(((Number) defaults.get("weight_decay")).doubleValue()));
            case "Adam" -> new Adam(groups, Adam.Options.defaults().lr(lr)
                    .weightDecay(((Number) defaults.get("weight_decay")).doubleValue()));
            case "AdamW" -> new AdamW(groups, AdamW.Options.defaults().lr(lr)); // PyTorch's default weight_decay
            default -> throw new IllegalArgumentException(name);
        };
    }

    private static LRScheduler schedulerFor(String name, Optimizer opt) {
        return switch (name) {
            case "sgd_step_lr" -> new StepLR(opt, 2, 0.5);
            case "adamw_cosine" -> new CosineAnnealingLR(opt, 2, 0.001);
            default -> null;
        };
    }

    @ParameterizedTest
    @ValueSource(strings = {"sgd_momentum", "adam", "adamw", "sgd_step_lr", "adamw_cosine"})
    void fiveStepsOfTwoGroupsMatchPyTorch(String name) {
        Golden g = Golden.load("param_groups");
        int steps = (int) g.number("steps");
        float[] weights = g.floats(name + ".weights");
        float[] biases = g.floats(name + ".biases");
        @SuppressWarnings("unchecked")
        List<List<Number>> lrs = (List<List<Number>>) g.json(name + ".lrs");
        try (Linear model = new Linear(4, 3, true, new Generator(0)); Optimizer opt = optimizerFor(g, name, model)) {
            model.weight().copyFrom(g.tensor("w0"));
            model.bias().copyFrom(g.tensor("b0"));
            LRScheduler scheduler = schedulerFor(name, opt);
            for (int t = 0; t < steps; t++) {
                try (var scope = Tensors.scope()) {
                    opt.zeroGrad();
                    new MSELoss().forward(model.forward(Tensor.ofRegion(g.floats("xs"), t * 24, 6, 4)),
                            Tensor.ofRegion(g.floats("ys"), t * 18, 6, 3)).backward();
                    opt.step();
                }
                if (scheduler != null) {
                    scheduler.step();
                }
                assertClose(Arrays.copyOfRange(weights, t * 12, (t + 1) * 12), model.weight().toFloatArray(), 1e-5, 1e-6,
                        name + " weight after step " + (t + 1));
                assertClose(Arrays.copyOfRange(biases, t * 3, (t + 1) * 3), model.bias().toFloatArray(), 1e-5, 1e-6,
                        name + " bias after step " + (t + 1));
                for (int gi = 0; gi < 2; gi++) {
                    double expected = lrs.get(t).get(gi).doubleValue();
                    assertEquals(expected, opt.paramGroups().get(gi).lr(), expected * 1e-12,
                            name + " group " + gi + " lr after step " + (t + 1));
                }
            }
            assertStateDictIsPyTorchs(g, name, opt.stateDict());
            if (scheduler != null) {
                Map<String, Object> sd = scheduler.stateDict();
                assertEquals(g.json(name + ".scheduler.base_lrs"), sd.get("base_lrs"));
                assertEquals(g.number(name + ".scheduler.last_epoch"), ((Integer) sd.get("last_epoch")).doubleValue());
                @SuppressWarnings("unchecked")
                List<Number> lastLr = (List<Number>) g.json(name + ".scheduler.last_lr");
                for (int gi = 0; gi < 2; gi++) {
                    double expected = lastLr.get(gi).doubleValue();
                    assertEquals(expected, scheduler.getLastLr().get(gi), expected * 1e-12, name + " _last_lr " + gi);
                }
            }
        }
    }

    /** param_groups: PyTorch's options (less its implementation switches) and index lists; state: its keys and values. */
    private static void assertStateDictIsPyTorchs(Golden g, String name, OptimizerStateDict sd) {
        @SuppressWarnings("unchecked")
        List<Map<String, Object>> torchGroups = (List<Map<String, Object>>) g.json(name + ".param_groups");
        assertEquals(torchGroups.size(), sd.paramGroups().size(), name + " group count");
        for (int gi = 0; gi < torchGroups.size(); gi++) {
            Map<String, Object> torch = torchGroups.get(gi);
            Map<String, Object> ours = sd.paramGroups().get(gi);
            assertEquals(torch.get("params"), ours.get("params"), name + " group " + gi + " params");
            Set<String> missing = new HashSet<>(torch.keySet());
            missing.removeAll(ours.keySet());
            assertTrue(PYTORCH_ONLY.containsAll(missing), name + " group " + gi + " lacks " + missing);
            assertTrue(torch.keySet().containsAll(ours.keySet()), name + " group " + gi + " has keys PyTorch's lacks: "
                    + ours.keySet());
            for (String key : ours.keySet()) {
                assertEquals(comparable(torch.get(key)), comparable(ours.get(key)), name + " group " + gi + " " + key);
            }
        }
        @SuppressWarnings("unchecked")
        Map<String, List<String>> torchState = (Map<String, List<String>>) g.json(name + ".state_keys");
        Map<String, List<String>> ourState = new LinkedHashMap<>();
        sd.state().forEach((i, entries) -> ourState.put(Integer.toString(i), new ArrayList<>(entries.keySet())));
        assertEquals(torchState, ourState, name + " state keys by index");
        sd.state().forEach((i, entries) -> entries.forEach((key, t) -> {
            String golden = name + ".state." + i + "." + key;
            if (key.equals(AbstractAdam.STEP)) {
                assertEquals(g.number(golden), t.item(), golden);
            } else {
                assertClose(g.floats(golden), t.toFloatArray(), 1e-5, 1e-8, golden);
            }
        }));
    }

    /** Numbers as doubles (PyTorch writes 0 for dampening's default), lists element-wise. */
    private static Object comparable(Object value) {
        if (value instanceof Number n) {
            return n.doubleValue();
        }
        if (value instanceof List<?> list) {
            return list.stream().map(ParamGroupsGoldenTest::comparable).toList();
        }
        return value;
    }
}
