package org.ddp4j.tensor;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

/**
 * bfloat16 and float16 tensors beyond conversion (LowPrecisionGoldenTest has PyTorch's bits):
 * creation, copies, the raw-bits API, and what is not supported yet failing with a message that
 * names the op, the dtype and the fix instead of crashing or computing something wrong.
 */
class LowPrecisionTensorTest {

    private static void assertFailsWith(Executable call, String... parts) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, call);
        for (String part : parts) {
            assertTrue(e.getMessage().contains(part), "expected '" + part + "' in: " + e.getMessage());
        }
    }

    @Test
    void creationFillsWithTheValueRoundedAsTorchFull() {
        try (var scope = Tensors.scope()) {
            Tensor z = Tensor.zeros(DType.BFLOAT16, 2, 3);
            assertEquals(DType.BFLOAT16, z.dtype());
            assertArrayEquals(new long[] {2, 3}, z.shape());
            assertArrayEquals(new short[6], z.toBitsArray());
            assertArrayEquals(new short[] {0x3c00, 0x3c00}, Tensor.ones(DType.FLOAT16, 2).toBitsArray());
            // 65520 is the float16 overflow point; 1/3 rounds to 0x3eab in bfloat16
            assertArrayEquals(new short[] {0x7c00}, Tensor.full(65520, DType.FLOAT16, Device.CPU, 1).toBitsArray());
            assertArrayEquals(new short[] {0x3eab}, Tensor.full(1.0 / 3, DType.BFLOAT16, Device.CPU, 1).toBitsArray());
            assertEquals(DType.FLOAT16, z.to(DType.FLOAT16).zerosLike().dtype());
            assertEquals(2, DType.BFLOAT16.bytes());
            assertEquals(2, DType.FLOAT16.bytes());
        }
    }

    @Test
    void copiesKeepBitsAndCopyFromConvertsBetweenFloatTypes() {
        try (var scope = Tensors.scope()) {
            short[] bits = {0x3f80, (short) 0xffff, 0x0001, (short) 0x8000};
            Tensor b = Tensor.ofBits(bits, DType.BFLOAT16, 2, 2);
            assertArrayEquals(bits, b.copy().toBitsArray());
            assertArrayEquals(bits, b.reshape(4).toBitsArray());
            assertArrayEquals(new short[] {0x0001, (short) 0x8000}, b.flatSlice(2, 2).toBitsArray());
            Tensor into = Tensor.zeros(DType.FLOAT16, 2, 2);
            into.copyFrom(Tensor.of(new float[] {1, 65520, 0.1f, -0f}, 2, 2));
            assertArrayEquals(new short[] {0x3c00, 0x7c00, 0x2e66, (short) 0x8000}, into.toBitsArray());
            assertSame(b, b.to(DType.BFLOAT16)); // no copy when the dtype is already right, as PyTorch
            assertFailsWith(() -> Tensor.zeros(DType.INT64, 4).copyFrom(b), "copy: cannot copy bfloat16[2, 2] on cpu",
                    "int64");
        }
    }

    @Test
    void theRawBitsApiRefusesTheOtherDtypes() {
        try (var scope = Tensors.scope()) {
            assertFailsWith(() -> Tensor.ofBits(new short[2], DType.FLOAT32, 2), "ofBits", "bfloat16 or float16", "float32");
            assertFailsWith(() -> Tensor.ofBits(new short[3], DType.FLOAT16, 2), "3 values cannot fill shape [2]");
            assertFailsWith(() -> Tensor.zeros(2).toBitsArray(), "toBitsArray", "float32[2]");
            assertFailsWith(() -> Tensor.ofLongs(new long[] {1}, 1).toFloatArray(), "toFloatArray", "toLongArray");
        }
    }

    @Test
    void opsNotYetInTheNewDtypesNameTheOpTheDtypeAndTheFix() {
        try (var scope = Tensors.scope()) {
            Tensor b = Tensor.ones(DType.BFLOAT16, 3);
            Tensor h = Tensor.ones(DType.FLOAT16, 3);
            String fix = "convert with tensor.to(DType.FLOAT32)";
            assertFailsWith(() -> b.add(b), "add of bfloat16 is not supported yet", fix);
            assertFailsWith(() -> h.mul(2f), "of float16 is not supported yet", fix);
            assertFailsWith(h::sum, "sum of float16 is not supported yet", fix);
            assertFailsWith(() -> b.to(DType.INT64), "to(int64) of bfloat16[3] on cpu is not supported yet");
            assertFailsWith(() -> Tensor.ofLongs(new long[] {1}, 1).to(DType.FLOAT16), "to(float16) of int64[1]",
                    "not supported yet");
        }
    }
}
