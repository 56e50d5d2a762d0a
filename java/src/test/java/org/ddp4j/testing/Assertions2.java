package org.ddp4j.testing;

import static org.junit.jupiter.api.Assertions.fail;

import java.util.Arrays;
import org.ddp4j.tensor.Tensor;

/** Value assertions for tensors: elementwise relative error with an absolute floor. */
public final class Assertions2 {
    private Assertions2() {}

    /**
     * Fails unless |actual - expected| <= rtol * |expected| + atol for every element, and shapes match.
     * The message names the worst element.
     */
    public static void assertClose(float[] expected, float[] actual, double rtol, double atol, String what) {
        if (expected.length != actual.length) {
            fail(what + ": length " + actual.length + " != expected " + expected.length);
        }
        int worst = -1;
        double worstExcess = 0;
        for (int i = 0; i < expected.length; i++) {
            double diff = Math.abs((double) actual[i] - expected[i]);
            double excess = diff - (rtol * Math.abs(expected[i]) + atol);
            if (!(excess <= 0) && (worst < 0 || excess > worstExcess || Double.isNaN(excess))) {
                worst = i;
                worstExcess = excess;
            }
        }
        if (worst >= 0) {
            fail(what + ": element " + worst + " is " + actual[worst] + ", expected " + expected[worst]
                    + " (rtol " + rtol + ", atol " + atol + ")");
        }
    }

    /** Shapes and values of two tensors agree within rtol/atol. */
    public static void assertClose(Tensor expected, Tensor actual, double rtol, double atol, String what) {
        if (!Arrays.equals(expected.shape(), actual.shape())) {
            fail(what + ": shape " + Arrays.toString(actual.shape()) + " != expected " + Arrays.toString(expected.shape()));
        }
        assertClose(expected.toFloatArray(), actual.toFloatArray(), rtol, atol, what);
    }
}
