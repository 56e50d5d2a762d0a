package org.ddp4j.serialization;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.InputStream;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.ddp4j.tensor.DType;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * BF16 and F16 tensors in safetensors files: the file PyTorch's side wrote
 * (golden/low_precision.safetensors, scripts/golden/low_precision_golden.py) loads with the dtypes,
 * shapes and bits PyTorch held; ddp4j writes them back in a file the independent reader
 * (src/test/python/read_safetensors.py) finds identical, tensor by tensor, to PyTorch's.
 */
class SafeTensorsLowPrecisionTest {
    @TempDir
    Path dir;

    private static JsonNode golden() throws Exception {
        try (InputStream in = SafeTensorsLowPrecisionTest.class.getResourceAsStream("/golden/low_precision.json")) {
            return new ObjectMapper().readTree(in).get("safetensors");
        }
    }

    private Path pytorchsFile() throws Exception {
        return Path.of(getClass().getResource("/golden/low_precision.safetensors").toURI());
    }

    private static DType dtypeOf(String name) {
        return switch (name) {
            case "BF16" -> DType.BFLOAT16;
            case "F16" -> DType.FLOAT16;
            default -> DType.FLOAT32;
        };
    }

    private static void assertHolds(JsonNode expected, Tensor t, String name) {
        assertEquals(dtypeOf(expected.get("dtype").asText()), t.dtype(), name + ": dtype");
        long[] shape = new long[expected.get("shape").size()];
        for (int i = 0; i < shape.length; i++) {
            shape[i] = expected.get("shape").get(i).asLong();
        }
        assertArrayEquals(shape, t.shape(), name + ": shape");
        JsonNode bits = expected.get("bits");
        if (t.dtype() == DType.FLOAT32) {
            float[] values = t.toFloatArray();
            for (int i = 0; i < values.length; i++) {
                assertEquals((int) bits.get(i).asLong(), Float.floatToRawIntBits(values[i]), name + "[" + i + "]");
            }
        } else {
            short[] actual = t.toBitsArray();
            for (int i = 0; i < actual.length; i++) {
                assertEquals((short) bits.get(i).asInt(), actual[i], name + "[" + i + "]");
            }
        }
    }

    @Test
    void pytorchsBf16AndF16TensorsLoadWithTheirBits() throws Exception {
        JsonNode expected = golden();
        try (var scope = Tensors.scope()) {
            Map<String, Tensor> tensors = SafeTensors.loadFile(pytorchsFile());
            assertEquals(List.of("bf16", "fp16", "f32"), new ArrayList<>(tensors.keySet()));
            for (Map.Entry<String, Tensor> e : tensors.entrySet()) {
                assertHolds(expected.get(e.getKey()), e.getValue(), e.getKey());
            }
            assertEquals(Map.of("format", "pt"), SafeTensors.loadMetadata(pytorchsFile()));
        }
    }

    @Test
    void ddp4jsFileHoldsTheSameTensorsForThePythonReaderAndForItself() throws Exception {
        Path ours = dir.resolve("ours.safetensors");
        JsonNode expected = golden();
        try (var scope = Tensors.scope()) {
            SafeTensors.saveFile(SafeTensors.loadFile(pytorchsFile()), ours, Map.of("format", "pt"));
            for (Map.Entry<String, Tensor> e : SafeTensors.loadFile(ours).entrySet()) {
                assertHolds(expected.get(e.getKey()), e.getValue(), e.getKey()); // CRC-32 checked on the way
            }
        }
        JsonNode theirs = SafeTensorsPythonReaderTest.readWithPython(pytorchsFile()).get("tensors");
        JsonNode mine = SafeTensorsPythonReaderTest.readWithPython(ours).get("tensors");
        assertEquals(theirs.size(), mine.size());
        for (int i = 0; i < theirs.size(); i++) {
            for (String field : new String[] {"name", "dtype", "shape", "sha256", "head"}) {
                assertEquals(theirs.get(i).get(field), mine.get(i).get(field), mine.get(i).get("name") + ": " + field);
            }
        }
        assertEquals("BF16", mine.get(0).get("dtype").asText());
        assertEquals(1.0, mine.get(0).get("head").get(0).asDouble()); // the reader widened bfloat16 1.0
    }
}
