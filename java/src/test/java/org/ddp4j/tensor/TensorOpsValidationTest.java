package org.ddp4j.tensor;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

/** Bad input to the transformer tensor ops: IllegalArgumentException naming the shapes, dims or dtypes. */
class TensorOpsValidationTest {

    private static void assertRejects(Executable call, String... fragments) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, call);
        for (String f : fragments) {
            assertTrue(e.getMessage().contains(f), "'" + e.getMessage() + "' should mention '" + f + "'");
        }
    }

    @Test
    void mismatchedShapes() {
        try (var scope = Tensors.scope()) {
            Tensor a = Tensor.zeros(3, 4);
            assertRejects(() -> a.matmul(Tensor.zeros(5, 6)), "[3, 4]", "[5, 6]");
            assertRejects(() -> Tensor.zeros(2, 3, 4).matmul(Tensor.zeros(5, 6)), "[2, 3, 4]", "[5, 6]");
            assertRejects(() -> Tensor.zeros(2, 3, 4).matmul(Tensor.zeros(3, 4, 5)), "[2]", "[3]", "broadcast");
            assertRejects(() -> a.add(Tensor.zeros(3)), "[3, 4]", "[3]", "broadcast");
            assertRejects(() -> a.div(Tensor.zeros(2, 4)), "[3, 4]", "[2, 4]");
            assertRejects(() -> a.lt(Tensor.zeros(5)), "[3, 4]", "[5]");
            assertRejects(() -> Tensor.cat(List.of(a, Tensor.zeros(2, 3)), 0), "[2, 3]", "[3, 4]");
            assertRejects(() -> Tensor.stack(List.of(a, Tensor.zeros(4, 3)), 0), "[4, 3]", "[3, 4]");
            assertRejects(() -> a.split(new long[] {1, 1}, 0), "[1, 1]", "[3, 4]");
            assertRejects(() -> a.maskedFill(Tensors.ofBooleans(new boolean[6], 2, 3), 0), "[2, 3]", "[3, 4]");
            assertRejects(() -> a.view(5, -1), "[5, -1]", "[3, 4]");
        }
    }

    @Test
    void dimensionsOutOfRange() {
        try (var scope = Tensors.scope()) {
            Tensor a = Tensor.zeros(3, 4);
            assertRejects(() -> a.transpose(0, 2), "dimension 2", "[3, 4]");
            assertRejects(() -> a.permute(0, 0), "[3, 4]");
            assertRejects(() -> a.permute(0), "[3, 4]");
            assertRejects(() -> a.softmax(-3), "dimension -3", "[3, 4]");
            assertRejects(() -> a.sum(2, false), "dimension 2", "[3, 4]");
            assertRejects(() -> a.max(5, false), "dimension 5", "[3, 4]");
            assertRejects(() -> a.split(2, 3), "[3, 4]");
            assertRejects(() -> Tensor.cat(List.of(a, a), 2), "dimension 2", "[3, 4]");
            assertRejects(() -> a.indexSelect(0, Tensor.ofLongs(new long[] {3}, 1)), "index value 3", "[3, 4]");
            assertRejects(() -> a.gather(1, Tensor.ofLongs(new long[] {0, 4}, 1, 2)), "index value 4", "[3, 4]");
            assertRejects(() -> Tensor.zeros(4).tril(0), "[4]");
        }
    }

    @Test
    void wrongDtypes() {
        try (var scope = Tensors.scope()) {
            Tensor a = Tensor.zeros(3, 4);
            Tensor longs = Tensor.zeros(DType.INT64, 3, 4);
            assertRejects(() -> longs.softmax(-1), "float32", "int64[3, 4]");
            assertRejects(() -> a.matmul(Tensor.zeros(DType.INT64, 4, 2)), "float32", "int64[4, 2]");
            assertRejects(() -> a.maskedFill(Tensor.zeros(3, 4), 0), "bool", "float32[3, 4]");
            assertRejects(() -> Tensor.where(a, a, a), "bool", "float32[3, 4]");
            assertRejects(() -> a.indexSelect(0, Tensor.zeros(2)), "int64", "float32[2]");
            assertRejects(() -> a.eq(longs), "float32[3, 4]", "int64[3, 4]");
            assertRejects(() -> a.logicalNot(), "bool", "float32[3, 4]");
            assertRejects(() -> Tensors.ofBooleans(new boolean[] {true}, 1).toFloatArray(), "toBooleanArray");
            assertRejects(() -> Tensors.ofBooleans(new boolean[] {true}, 1).to(DType.FLOAT32), "bool");
        }
    }

    @Test
    void boolTensors() {
        try (var scope = Tensors.scope()) {
            boolean[] values = {true, false, false, true, true, false};
            Tensor mask = Tensors.ofBooleans(values, 2, 3);
            assertEquals(DType.BOOL, mask.dtype());
            assertEquals(1, DType.BOOL.bytes());
            assertTrue(!DType.BOOL.isFloatingPoint());
            assertArrayEquals(values, mask.toBooleanArray());
            assertArrayEquals(values, mask.copy().toBooleanArray());
            assertArrayEquals(new boolean[] {true, true, false, true, false, false}, mask.transpose(0, 1).toBooleanArray());
            assertArrayEquals(new boolean[] {true, true, true}, Tensor.full(2, DType.BOOL, Device.CPU, 3).toBooleanArray());
            assertEquals("tensor([[True, False, False],\n        [True, True, False]])", mask.toString());
            assertRejects(() -> Tensors.ofBooleans(values, 4), "6 values", "[4]");
        }
    }
}
