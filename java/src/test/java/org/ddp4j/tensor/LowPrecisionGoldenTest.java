package org.ddp4j.tensor;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Tensor.to(dtype) between float32, bfloat16 and float16 gives PyTorch's bits
 * (golden/low_precision.json from scripts/golden/low_precision_golden.py, torch 1.13 on CPU): on
 * hand-picked rounding ties, subnormals, overflows, NaNs and zeros, on random patterns, on every
 * 16-bit pattern widened and on a million float32 patterns narrowed (SHA-256 of the bytes); its
 * gradient converts back as PyTorch's ToCopyBackward0; small tensors print as PyTorch prints them.
 */
class LowPrecisionGoldenTest {
    private static final JsonNode GOLDEN = load();

    private static JsonNode load() {
        try (InputStream in = LowPrecisionGoldenTest.class.getResourceAsStream("/golden/low_precision.json")) {
            if (in == null) {
                throw new IllegalStateException("golden/low_precision.json is missing: run /usr/bin/python3 "
                        + "scripts/golden/low_precision_golden.py");
            }
            return new ObjectMapper().readTree(in);
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    private static int[] ints(JsonNode list) {
        int[] out = new int[list.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = (int) list.get(i).asLong(); // unsigned 32-bit in the file
        }
        return out;
    }

    private static short[] shorts(JsonNode list) {
        short[] out = new short[list.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = (short) list.get(i).asInt();
        }
        return out;
    }

    private static Tensor floatsOfBits(int[] bits) {
        float[] values = new float[bits.length];
        for (int i = 0; i < bits.length; i++) {
            values[i] = Float.intBitsToFloat(bits[i]);
        }
        return Tensor.of(values, values.length);
    }

    private static int[] bitsOf(Tensor floats) {
        float[] values = floats.toFloatArray();
        int[] out = new int[values.length];
        for (int i = 0; i < values.length; i++) {
            out[i] = Float.floatToRawIntBits(values[i]);
        }
        return out;
    }

    /** Names the first differing element with its input, so a failure says which case broke. */
    private static void assertBits(String what, short[] expected, short[] actual, int[] inputs, JsonNode why) {
        assertEquals(expected.length, actual.length, what + ": length");
        for (int i = 0; i < expected.length; i++) {
            if (expected[i] != actual[i]) {
                String label = why != null && i < why.size() ? " (" + why.get(i).asText() + ")" : "";
                throw new AssertionError(String.format("%s of %08x%s: PyTorch gives %04x, ddp4j %04x", what, inputs[i],
                        label, expected[i] & 0xffff, actual[i] & 0xffff));
            }
        }
    }

    @Test
    void float32ToBfloat16AndFloat16GivePyTorchsBitsOnEveryCase() {
        JsonNode cases = GOLDEN.get("cases");
        int[] inputs = ints(cases.get("f32"));
        JsonNode why = cases.get("why");
        try (var scope = Tensors.scope()) {
            Tensor x = floatsOfBits(inputs);
            Tensor bf16 = x.to(DType.BFLOAT16);
            Tensor fp16 = x.to(DType.FLOAT16);
            assertEquals(DType.BFLOAT16, bf16.dtype());
            assertArrayEquals(x.shape(), fp16.shape());
            assertBits("to(bfloat16)", shorts(cases.get("bf16")), bf16.toBitsArray(), inputs, why);
            assertBits("to(float16)", shorts(cases.get("fp16")), fp16.toBitsArray(), inputs, why);
            assertArrayEquals(ints(cases.get("bf16_to_f32")), bitsOf(bf16.to(DType.FLOAT32)), "bfloat16 to float32");
            assertArrayEquals(ints(cases.get("fp16_to_f32")), bitsOf(fp16.to(DType.FLOAT32)), "float16 to float32");
            // toFloatArray widens exactly as to(FLOAT32) does
            assertArrayEquals(ints(cases.get("fp16_to_f32")), bitsOf(fp16), "float16 toFloatArray");
            assertBits("bfloat16 to(float16)", shorts(cases.get("bf16_to_fp16")), bf16.to(DType.FLOAT16).toBitsArray(),
                    inputs, why);
            assertBits("float16 to(bfloat16)", shorts(cases.get("fp16_to_bf16")), fp16.to(DType.BFLOAT16).toBitsArray(),
                    inputs, why);
        }
    }

    private static String sha256(ByteBuffer bytes) throws Exception {
        return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(bytes.array()));
    }

    private static ByteBuffer littleEndian(short[] bits) {
        ByteBuffer out = ByteBuffer.allocate(bits.length * 2).order(ByteOrder.LITTLE_ENDIAN);
        out.asShortBuffer().put(bits);
        return out;
    }

    private static ByteBuffer littleEndian(int[] bits) {
        ByteBuffer out = ByteBuffer.allocate(bits.length * 4).order(ByteOrder.LITTLE_ENDIAN);
        out.asIntBuffer().put(bits);
        return out;
    }

    @Test
    void everySixteenBitPatternWidensAndAMillionPatternsNarrowAsPyTorch() throws Exception {
        JsonNode digests = GOLDEN.get("digests");
        short[] all = new short[1 << 16];
        for (int i = 0; i < all.length; i++) {
            all[i] = (short) i;
        }
        List<Integer> lows = new ArrayList<>();
        digests.get("lows").forEach(n -> lows.add(n.asInt()));
        int[] patterns = new int[all.length * lows.size()];
        int at = 0;
        for (int hi = 0; hi < 1 << 16; hi++) {
            for (int lo : lows) {
                patterns[at++] = hi << 16 | lo;
            }
        }
        try (var scope = Tensors.scope()) {
            assertEquals(digests.get("bf16_all_to_f32").asText(),
                    sha256(littleEndian(bitsOf(Tensor.ofBits(all, DType.BFLOAT16, all.length)))), "every bfloat16 widened");
            assertEquals(digests.get("fp16_all_to_f32").asText(),
                    sha256(littleEndian(bitsOf(Tensor.ofBits(all, DType.FLOAT16, all.length)))), "every float16 widened");
            Tensor x = floatsOfBits(patterns);
            assertEquals(digests.get("f32_patterns_to_bf16").asText(), sha256(littleEndian(x.to(DType.BFLOAT16).toBitsArray())),
                    "float32 patterns to bfloat16");
            assertEquals(digests.get("f32_patterns_to_fp16").asText(), sha256(littleEndian(x.to(DType.FLOAT16).toBitsArray())),
                    "float32 patterns to float16");
        }
    }

    @Test
    void gradientThroughToConvertsBackAsPyTorchs() {
        JsonNode g = GOLDEN.get("gradients");
        float[] xs = floatsOfBits(ints(g.get("x"))).toFloatArray();
        try (var scope = Tensors.scope()) {
            Tensor w = floatsOfBits(ints(g.get("w")));
            for (String name : new String[] {"bf16", "fp16"}) {
                DType dtype = name.equals("bf16") ? DType.BFLOAT16 : DType.FLOAT16;
                Tensor x = Tensor.of(xs, xs.length).requiresGrad(true);
                Tensor y = x.to(dtype).to(DType.FLOAT32).mul(w).sum();
                assertEquals("ToCopyBackward", y.gradFn().inputs()[0].gradFn().inputs()[0].gradFn().name());
                y.backward();
                assertArrayEquals(ints(g.get(name).get("y")), bitsOf(y), name + ": y");
                // w rounded to the low dtype (float16: 70000 overflows to inf) and widened back
                assertArrayEquals(ints(g.get(name).get("x_grad")), bitsOf(x.grad()), name + ": x.grad");
                assertEquals(DType.FLOAT32, x.grad().dtype());
            }
            // A bfloat16 leaf gets a bfloat16 gradient.
            JsonNode leaf = g.get("bf16_leaf");
            Tensor x = Tensor.ofBits(shorts(leaf.get("x")), DType.BFLOAT16, xs.length).requiresGrad(true);
            Tensor y = x.to(DType.FLOAT32).mul(w).sum();
            y.backward();
            assertArrayEquals(ints(leaf.get("y")), bitsOf(y), "bfloat16 leaf: y");
            assertEquals(DType.BFLOAT16, x.grad().dtype());
            assertArrayEquals(shorts(leaf.get("x_grad")), x.grad().toBitsArray(), "bfloat16 leaf: x.grad");
        }
    }

    @Test
    void printsAsPyTorchPrints() {
        JsonNode repr = GOLDEN.get("repr");
        try (var scope = Tensors.scope()) {
            assertEquals(repr.get("bf16_vector").asText(), Tensor.of(new float[] {1.1f, 2.2f}, 2).to(DType.BFLOAT16).toString());
            assertEquals(repr.get("fp16_matrix").asText(),
                    Tensor.of(new float[] {0.5f, 2f, 1f, 3f}, 2, 2).to(DType.FLOAT16).toString());
            assertEquals(repr.get("bf16_requires_grad").asText(),
                    Tensor.of(new float[] {1f, 2.5f}, 2).to(DType.BFLOAT16).requiresGrad(true).toString());
        }
    }
}
