package org.ddp4j.tensor;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.ddp4j.internal.JniCalls;
import org.junit.jupiter.api.Test;

/** Tensors.flattenInto / unflattenFrom: one crossing each, and clear errors. */
class FlattenTest {
    @Test
    void flattenThenUnflattenRoundTripsInOneCrossingEach() {
        try (var scope = Tensors.scope()) {
            Tensor a = Tensor.of(new float[] {1, 2, 3, 4}, 2, 2);
            Tensor b = Tensor.of(new float[] {5}, 1);
            Tensor c = Tensor.of(new float[] {6, 7, 8}, 3);
            Tensor flat = Tensor.full(0, DType.FLOAT32, Device.CPU, 8);
            long before = JniCalls.count();
            Tensors.flattenInto(List.of(a, b, c), flat);
            assertEquals(1, JniCalls.count() - before);
            assertArrayEquals(new float[] {1, 2, 3, 4, 5, 6, 7, 8}, flat.toFloatArray());

            Tensor flat2 = Tensor.of(new float[] {8, 7, 6, 5, 4, 3, 2, 1}, 8);
            before = JniCalls.count();
            Tensors.unflattenFrom(flat2, List.of(a, b, c));
            assertEquals(1, JniCalls.count() - before);
            assertArrayEquals(new float[] {8, 7, 6, 5}, a.toFloatArray());
            assertArrayEquals(new float[] {4}, b.toFloatArray());
            assertArrayEquals(new float[] {3, 2, 1}, c.toFloatArray());
        }
    }

    @Test
    void mismatchesThrowIllegalArgumentNamingTheProblem() {
        try (var scope = Tensors.scope()) {
            Tensor a = Tensor.of(new float[] {1, 2}, 2);
            Tensor labels = Tensor.ofLongs(new long[] {1, 2}, 2);
            Tensor flat = Tensor.full(0, DType.FLOAT32, Device.CPU, 3);
            var size = assertThrows(IllegalArgumentException.class, () -> Tensors.flattenInto(List.of(a), flat));
            assertTrue(size.getMessage().contains("2 elements"), size.getMessage());
            var dtype = assertThrows(IllegalArgumentException.class,
                    () -> Tensors.unflattenFrom(flat, List.of(a, labels)));
            assertTrue(dtype.getMessage().contains("dtype"), dtype.getMessage());
        }
    }
}
