package org.ddp4j.nn;

import static org.ddp4j.testing.Assertions2.assertClose;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import java.util.ArrayList;
import java.util.List;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;
import org.ddp4j.testing.Golden;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * BatchNorm2d's options against PyTorch (scripts/golden/layers_golden.py): affine=False,
 * track_running_stats=False, momentum=None (cumulative average) and other eps and momentum; three
 * training steps then one eval step, each with a backward, checking outputs, gradients, buffers,
 * num_batches_tracked, the state_dict's keys and the printed form.
 */
class BatchNorm2dOptionsGoldenTest {
    private static final double RTOL = 1e-5;
    private static final double ATOL = 1e-5;
    private static final Golden G = Golden.load("batch_norm2d_options");

    private static BatchNorm2d create(String name) {
        return switch (name) {
            case "no_affine" -> new BatchNorm2d(3, 1e-5, 0.1, false, true);
            case "no_running_stats" -> new BatchNorm2d(3, 1e-5, 0.1, true, false);
            case "cumulative" -> new BatchNorm2d(3, 1e-5, null, true, true);
            case "eps_momentum" -> new BatchNorm2d(3, 1e-3, 0.3);
            default -> throw new IllegalArgumentException(name);
        };
    }

    @ParameterizedTest
    @ValueSource(strings = {"no_affine", "no_running_stats", "cumulative", "eps_momentum"})
    void matchesPyTorch(String name) {
        int steps = (int) G.number("steps");
        try (var scope = Tensors.scope(); BatchNorm2d bn = create(name)) {
            assertEquals(G.text(name + ".repr"), bn.toString());
            assertEquals(G.json(name + ".state_dict_keys"), new ArrayList<>(bn.stateDict().keySet()));
            if (bn.affine()) {
                bn.weight().copyFrom(G.tensor(name + ".weight"));
                bn.bias().copyFrom(G.tensor(name + ".bias"));
            } else {
                assertNull(bn.weight());
                assertEquals(List.of(), bn.parameters());
            }
            for (int step = 0; step <= steps; step++) {
                String key = name + "." + step;
                if (step == steps) {
                    bn.eval();
                }
                Tensor x = G.tensor(key + ".x").requiresGrad(true);
                Tensor y = bn.forward(x);
                assertClose(G.tensor(key + ".y"), y, RTOL, ATOL, key + " y");
                for (Tensor p : bn.parameters()) {
                    p.setGrad(null);
                }
                y.backward(G.tensor(key + ".grad_y"));
                assertClose(G.tensor(key + ".grad_x"), x.grad(), RTOL, ATOL, key + " grad_x");
                if (bn.affine()) {
                    assertClose(G.tensor(key + ".grad_weight"), bn.weight().grad(), RTOL, ATOL, key + " grad_weight");
                    assertClose(G.tensor(key + ".grad_bias"), bn.bias().grad(), RTOL, ATOL, key + " grad_bias");
                }
                if (bn.trackRunningStats()) {
                    assertClose(G.tensor(key + ".running_mean"), bn.runningMean(), RTOL, ATOL, key + " running_mean");
                    assertClose(G.tensor(key + ".running_var"), bn.runningVar(), RTOL, ATOL, key + " running_var");
                    assertEquals((long) G.number(key + ".num_batches_tracked"), bn.numBatchesTracked(), key);
                } else {
                    assertNull(bn.runningMean());
                }
            }
        }
    }
}
