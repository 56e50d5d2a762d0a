package org.ddp4j.nn;

import static org.ddp4j.testing.Assertions2.assertClose;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.ddp4j.nn.functional.Functional;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;
import org.ddp4j.testing.Golden;
import org.ddp4j.testing.GradLeaves;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** Linear and ReLU forward and backward against PyTorch (golden/linear.json, golden/relu.json). */
class LinearGoldenTest {
    static final double RTOL = 1e-5;
    static final double ATOL = 1e-6;

    private final GradLeaves leaves = new GradLeaves();

    private Tensor leaf(Tensor t) {
        return leaves.leaf(t);
    }

    @AfterEach
    void freeGrads() {
        leaves.freeGrads();
    }

    @ParameterizedTest
    @ValueSource(strings = {"small", "large"})
    void linearWithBiasMatchesPyTorch(String tag) {
        Golden g = Golden.load("linear");
        try (var scope = Tensors.scope()) {
            Tensor x = leaf(g.tensor(tag + ".x"));
            Tensor w = leaf(g.tensor(tag + ".w"));
            Tensor b = leaf(g.tensor(tag + ".b"));
            Tensor y = Functional.linear(x, w, b);
            assertClose(g.tensor(tag + ".y"), y, RTOL, ATOL, "linear y");
            y.backward(g.tensor(tag + ".gy"));
            assertClose(g.tensor(tag + ".gx"), x.grad(), RTOL, ATOL, "linear grad x");
            assertClose(g.tensor(tag + ".gw"), w.grad(), RTOL, ATOL, "linear grad w");
            assertClose(g.tensor(tag + ".gb"), b.grad(), RTOL, ATOL, "linear grad b");
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"small", "large"})
    void linearWithoutBiasMatchesPyTorch(String tag) {
        Golden g = Golden.load("linear");
        try (var scope = Tensors.scope()) {
            Tensor x = leaf(g.tensor(tag + ".x"));
            Tensor w = leaf(g.tensor(tag + ".w"));
            Tensor y = Functional.linear(x, w);
            assertClose(g.tensor(tag + ".y_nobias"), y, RTOL, ATOL, "linear y (no bias)");
            y.backward(g.tensor(tag + ".gy"));
            assertClose(g.tensor(tag + ".gx_nobias"), x.grad(), RTOL, ATOL, "linear grad x (no bias)");
            assertClose(g.tensor(tag + ".gw_nobias"), w.grad(), RTOL, ATOL, "linear grad w (no bias)");
        }
    }

    @Test
    void linearSkipsGradientsNobodyNeeds() {
        Golden g = Golden.load("linear");
        try (var scope = Tensors.scope()) {
            Tensor x = g.tensor("small.x"); // data: no gradient wanted
            Tensor w = leaf(g.tensor("small.w"));
            Tensor b = g.tensor("small.b");
            Functional.linear(x, w, b).backward(g.tensor("small.gy"));
            assertClose(g.tensor("small.gw"), w.grad(), RTOL, ATOL, "linear grad w");
            assertNull(x.grad());
            assertNull(b.grad());
        }
    }

    @Test
    void linearModuleUsesItsParameters() {
        Golden g = Golden.load("linear");
        try (var scope = Tensors.scope(); Linear layer = new Linear(3, 2)) {
            layer.weight().copyFrom(g.tensor("small.w"));
            layer.bias().copyFrom(g.tensor("small.b"));
            Tensor y = layer.forward(g.tensor("small.x"));
            assertClose(g.tensor("small.y"), y, RTOL, ATOL, "Linear module y");
            y.backward(g.tensor("small.gy"));
            assertClose(g.tensor("small.gw"), layer.weight().grad(), RTOL, ATOL, "Linear module grad w");
            assertClose(g.tensor("small.gb"), layer.bias().grad(), RTOL, ATOL, "Linear module grad b");
        }
    }

    @Test
    void reluMatchesPyTorch() {
        Golden g = Golden.load("relu");
        try (var scope = Tensors.scope()) {
            Tensor x = leaf(g.tensor("x"));
            Tensor y = new ReLU().forward(x);
            assertClose(g.tensor("y"), y, 0, 0, "relu y");
            y.backward(g.tensor("gy"));
            assertClose(g.tensor("gx"), x.grad(), 0, 0, "relu grad x");
        }
    }

    @Test
    void featureMismatchNamesBothShapes() {
        try (var scope = Tensors.scope()) {
            Tensor x = Tensor.zeros(4, 3);
            Tensor w = Tensor.zeros(2, 5);
            var e = assertThrows(IllegalArgumentException.class, () -> Functional.linear(x, w));
            assertTrue(e.getMessage().contains("linear") && e.getMessage().contains("[4, 3]")
                    && e.getMessage().contains("[2, 5]"), e.getMessage());
            var eb = assertThrows(IllegalArgumentException.class,
                    () -> Functional.linear(Tensor.zeros(4, 5), w, Tensor.zeros(3)));
            assertTrue(eb.getMessage().contains("[3]") && eb.getMessage().contains("[2, 5]"), eb.getMessage());
            try (Linear layer = new Linear(3, 2)) {
                var em = assertThrows(IllegalArgumentException.class, () -> layer.forward(Tensor.zeros(4, 2)));
                assertTrue(em.getMessage().contains("[4, 2]") && em.getMessage().contains("[2, 3]"), em.getMessage());
            }
        }
    }
}
