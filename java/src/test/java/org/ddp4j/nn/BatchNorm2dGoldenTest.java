package org.ddp4j.nn;

import static org.ddp4j.testing.Assertions2.assertClose;
import static org.junit.jupiter.api.Assertions.assertEquals;

import org.ddp4j.nn.functional.BatchNorm2dFunction;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;
import org.ddp4j.testing.Golden;
import org.junit.jupiter.api.Test;

/** BatchNorm2d in training and eval mode against PyTorch (scripts/golden/conv_golden.py). */
class BatchNorm2dGoldenTest {
    private static final double RTOL = 1e-5;
    private static final double ATOL = 1e-5;
    private static final Golden G = Golden.load("batch_norm2d");

    private static BatchNorm2d loaded(double momentum) {
        BatchNorm2d bn = new BatchNorm2d((int) G.shape("weight")[0], G.number("eps"), momentum);
        try (var scope = Tensors.scope()) {
            bn.weight().copyFrom(G.tensor("weight"));
            bn.bias().copyFrom(G.tensor("bias"));
            bn.runningMean().copyFrom(G.tensor("running_mean"));
            bn.runningVar().copyFrom(G.tensor("running_var"));
        }
        return bn;
    }

    @Test
    void trainingModeMatchesPyTorch() {
        try (var scope = Tensors.scope(); BatchNorm2d bn = loaded(G.number("momentum"))) {
            Tensor x = G.tensor("x").requiresGrad(true);
            Tensor y = bn.forward(x);
            assertClose(G.tensor("y_train"), y, RTOL, ATOL, "y (train)");
            assertClose(G.tensor("running_mean_after"), bn.runningMean(), RTOL, ATOL, "running_mean");
            assertClose(G.tensor("running_var_after"), bn.runningVar(), RTOL, ATOL, "running_var");
            assertEquals(G.tensor("num_batches_tracked_after").toLongArray()[0], bn.numBatchesTracked());
            y.backward(G.tensor("grad_y"));
            assertClose(G.tensor("grad_x_train"), x.grad(), RTOL, ATOL, "grad_x (train)");
            assertClose(G.tensor("grad_weight_train"), bn.weight().grad(), RTOL, ATOL, "grad_weight (train)");
            assertClose(G.tensor("grad_bias_train"), bn.bias().grad(), RTOL, ATOL, "grad_bias (train)");
            x.grad().close();
        }
    }

    @Test
    void evalModeMatchesPyTorch() {
        try (var scope = Tensors.scope(); BatchNorm2d bn = loaded(G.number("momentum"))) {
            bn.eval();
            Tensor x = G.tensor("x").requiresGrad(true);
            Tensor y = bn.forward(x);
            assertClose(G.tensor("y_eval"), y, RTOL, ATOL, "y (eval)");
            // Eval mode leaves the running statistics alone.
            assertClose(G.tensor("running_mean"), bn.runningMean(), 0, 0, "running_mean (eval)");
            assertClose(G.tensor("running_var"), bn.runningVar(), 0, 0, "running_var (eval)");
            assertEquals(0, bn.numBatchesTracked());
            y.backward(G.tensor("grad_y"));
            assertClose(G.tensor("grad_x_eval"), x.grad(), RTOL, ATOL, "grad_x (eval)");
            assertClose(G.tensor("grad_weight_eval"), bn.weight().grad(), RTOL, ATOL, "grad_weight (eval)");
            assertClose(G.tensor("grad_bias_eval"), bn.bias().grad(), RTOL, ATOL, "grad_bias (eval)");
            x.grad().close();
        }
    }

    @Test
    void functionWithoutModule() {
        try (var scope = Tensors.scope()) {
            Tensor x = G.tensor("x").requiresGrad(true);
            Tensor gamma = G.tensor("weight").requiresGrad(true);
            Tensor beta = G.tensor("bias").requiresGrad(true);
            Tensor rm = G.tensor("running_mean");
            Tensor rv = G.tensor("running_var");
            Tensor y = BatchNorm2dFunction.apply(x, gamma, beta, rm, rv, true, G.number("momentum"), G.number("eps"));
            assertClose(G.tensor("y_train"), y, RTOL, ATOL, "y (train)");
            assertClose(G.tensor("running_mean_after"), rm, RTOL, ATOL, "running_mean");
            y.backward(G.tensor("grad_y"));
            assertClose(G.tensor("grad_x_train"), x.grad(), RTOL, ATOL, "grad_x (train)");
            assertClose(G.tensor("grad_weight_train"), gamma.grad(), RTOL, ATOL, "grad_weight (train)");
            assertClose(G.tensor("grad_bias_train"), beta.grad(), RTOL, ATOL, "grad_bias (train)");
            for (Tensor t : new Tensor[] {x, gamma, beta}) {
                t.grad().close();
            }
        }
    }

    @Test
    void otherMomentumOverTwoSteps() {
        try (var scope = Tensors.scope(); BatchNorm2d bn = loaded(G.number("momentum3"));
                var noGrad = Tensors.noGrad()) {
            float[] x = G.floats("x");
            float[] x2 = new float[x.length];
            for (int i = 0; i < x.length; i++) {
                x2[i] = x[i] * 0.5f + 1f;
            }
            bn.forward(Tensor.of(x, G.shape("x")));
            bn.forward(Tensor.of(x2, G.shape("x")));
            assertClose(G.tensor("running_mean_after_two_steps_m3"), bn.runningMean(), RTOL, ATOL, "running_mean");
            assertClose(G.tensor("running_var_after_two_steps_m3"), bn.runningVar(), RTOL, ATOL, "running_var");
            assertEquals(2, bn.numBatchesTracked());
        }
    }
}
