package org.ddp4j.serialization;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.ddp4j.examples.ConvNet;
import org.ddp4j.nn.CrossEntropyLoss;
import org.ddp4j.optim.SGD;
import org.ddp4j.tensor.DType;
import org.ddp4j.tensor.Generator;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;
import org.ddp4j.testing.RepoFiles;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A file ddp4j writes is read by an independent reader, src/test/python/read_safetensors.py
 * (struct, json and numpy, with the safetensors loader's checks), which finds the same names,
 * dtypes, shapes, values (SHA-256 of the bytes) and metadata, and computes with zlib the same
 * CRC-32 of each tensor as ddp4j records in the metadata.
 */
class SafeTensorsPythonReaderTest {
    static final Path PYTHON = Path.of("/usr/bin/python3");
    static final Path READER = RepoFiles.path("java/src/test/python/read_safetensors.py");

    @TempDir
    Path dir;

    /** Runs the reader on file (bounded: 60 s) and returns its JSON output. */
    static JsonNode readWithPython(Path file) throws Exception {
        assertTrue(Files.isExecutable(PYTHON), PYTHON + " is missing: install python3 and python3-numpy (scripts/setup.sh does)");
        Process p = new ProcessBuilder(PYTHON.toString(), READER.toAbsolutePath().toString(), file.toString()).start();
        CompletableFuture<String> err = CompletableFuture.supplyAsync(() -> {
            try {
                return new String(p.getErrorStream().readAllBytes(), StandardCharsets.UTF_8);
            } catch (java.io.IOException e) {
                return e.toString();
            }
        });
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!p.waitFor(60, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new AssertionError("read_safetensors.py did not finish within 60 s");
        }
        assertEquals(0, p.exitValue(), "read_safetensors.py rejected " + file + " (needs python3-numpy):\n"
                + err.get(10, TimeUnit.SECONDS) + out);
        return new ObjectMapper().readTree(out);
    }

    private static String sha256(Tensor t) throws Exception {
        ByteBuffer bytes = ByteBuffer.allocate((int) (t.numel() * t.dtype().bytes())).order(ByteOrder.LITTLE_ENDIAN);
        if (t.dtype() == DType.FLOAT32) {
            bytes.asFloatBuffer().put(t.toFloatArray());
        } else {
            bytes.asLongBuffer().put(t.toLongArray());
        }
        return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(bytes.array()));
    }

    @Test
    void pythonReadsTheConvNetStateDictWithTheSameNamesShapesAndValues() throws Exception {
        Path file = dir.resolve("convnet.safetensors");
        try (ConvNet net = new ConvNet(10, new Generator(4)); SGD opt = new SGD(net.parameters(), 0.05, 0.9, 0, 0, false);
                var scope = Tensors.scope()) {
            // one step, so that the BatchNorm buffers hold more than their initial values
            Tensor loss = new CrossEntropyLoss().forward(net.forward(Tensor.of(new Generator(5).uniform(4 * 784, 0f, 1f),
                    4, 1, 28, 28)), Tensor.ofLongs(new long[] {1, 3, 5, 7}, 4));
            loss.backward();
            opt.step();
            Map<String, Tensor> state = new LinkedHashMap<>(net.stateDict());
            state.put("extra.int64_matrix", Tensor.ofLongs(new long[] {-1, 0, Long.MAX_VALUE, 7, 8, 9}, 2, 3));
            SafeTensors.saveFile(state, file, Map.of("format", "pt", "epoch", "1"));

            JsonNode read = readWithPython(file);
            Map<?, ?> metadata = new ObjectMapper().convertValue(read.get("metadata"), Map.class);
            JsonNode checksums = new ObjectMapper().readTree((String) metadata.get(SafeTensorsHeader.CHECKSUMS_KEY));
            assertEquals(Map.of("format", "pt", "epoch", "1", SafeTensorsHeader.CHECKSUMS_KEY, metadata.get(
                    SafeTensorsHeader.CHECKSUMS_KEY)), metadata, "the user's metadata and ddp4j's checksums, all strings");
            List<String> names = new ArrayList<>();
            for (JsonNode t : read.get("tensors")) {
                String name = t.get("name").asText();
                names.add(name);
                Tensor expected = state.get(name);
                assertEquals(expected.dtype() == DType.FLOAT32 ? "F32" : "I64", t.get("dtype").asText(), name);
                List<Long> shape = new ArrayList<>();
                t.get("shape").forEach(s -> shape.add(s.asLong()));
                assertEquals(java.util.Arrays.stream(expected.shape()).boxed().toList(), shape, name);
                assertEquals(sha256(expected), t.get("sha256").asText(), name + ": values differ");
                assertEquals(t.get("crc32").asText(), checksums.get(name).asText(), name + ": zlib.crc32 disagrees");
                JsonNode head = t.get("head");
                if (expected.dtype() == DType.FLOAT32) {
                    assertEquals(expected.toFloatArray()[0], (float) head.get(0).asDouble(), name);
                } else {
                    assertEquals(expected.toLongArray()[0], head.get(0).asLong(), name);
                }
            }
            assertEquals(List.copyOf(state.keySet()), names, "Python sees the tensors in the order they were written");
            assertEquals(1L, state.get("layer1.1.num_batches_tracked").toLongArray()[0]);
        }
    }
}
