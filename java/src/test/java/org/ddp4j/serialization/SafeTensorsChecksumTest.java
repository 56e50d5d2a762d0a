package org.ddp4j.serialization;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Files ddp4j writes carry a CRC-32 of each tensor's bytes in the metadata, and a tensor whose
 * bytes changed after writing (one flipped bit) is refused by name, where it once loaded silently;
 * files without checksums, as PyTorch and the Python writer make them, still load.
 */
class SafeTensorsChecksumTest {
    @TempDir
    Path dir;

    private Path saveThree(String name) {
        Path file = dir.resolve(name);
        try (var scope = Tensors.scope()) {
            Map<String, Tensor> tensors = new LinkedHashMap<>();
            tensors.put("conv.weight", Tensor.of(new float[] {0.5f, -1f, 2f, 3f}, 2, 2));
            tensors.put("bn.num_batches_tracked", Tensor.ofLongs(new long[] {7}));
            tensors.put("fc.bias", Tensor.of(new float[] {1f, 2f, 3f}, 3));
            SafeTensors.saveFile(tensors, file, Map.of("format", "pt"));
        }
        return file;
    }

    /** The header's JSON and where the data section starts. */
    private static JsonNode header(byte[] bytes) throws IOException {
        long n = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN).getLong(0);
        return new ObjectMapper().readTree(new String(bytes, 8, (int) n, StandardCharsets.UTF_8));
    }

    /** Flips one bit of the tensor's {@code index}-th byte, in place. */
    private static void flipBit(Path file, String tensor, int index) throws IOException {
        byte[] bytes = Files.readAllBytes(file);
        long n = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN).getLong(0);
        int at = (int) (8 + n + header(bytes).get(tensor).get("data_offsets").get(0).asLong()) + index;
        bytes[at] ^= 0x10;
        Files.write(file, bytes);
    }

    @Test
    void aFlippedBitInATensorsDataIsRefusedNamingTheTensorAndTheFile() throws IOException {
        for (String tensor : List.of("conv.weight", "bn.num_batches_tracked", "fc.bias")) {
            Path file = saveThree(tensor + ".safetensors");
            flipBit(file, tensor, 2);
            UncheckedIOException e = assertThrows(UncheckedIOException.class, () -> SafeTensors.loadFile(file), tensor);
            assertInstanceOf(SafeTensorsFormatException.class, e.getCause());
            assertTrue(e.getMessage().startsWith(file + ": tensor '" + tensor + "' does not match its CRC-32"),
                    e.getMessage());
            assertTrue(e.getMessage().contains("changed after it was written"), e.getMessage());
            // the header is intact, so the metadata alone still reads
            assertEquals(Map.of("format", "pt"), SafeTensors.loadMetadata(file));
        }
    }

    @Test
    void theChecksumsAreZlibsCrc32OfEachTensorsBytesAndStayOutOfTheMetadataReadBack() throws IOException {
        Path file = saveThree("ok.safetensors");
        byte[] bytes = Files.readAllBytes(file);
        JsonNode metadata = header(bytes).get("__metadata__");
        assertTrue(metadata.get(SafeTensorsHeader.CHECKSUMS_KEY).isTextual(), "safetensors metadata values are strings");
        JsonNode sums = new ObjectMapper().readTree(metadata.get(SafeTensorsHeader.CHECKSUMS_KEY).textValue());
        java.util.zip.CRC32 crc = new java.util.zip.CRC32();
        crc.update(new byte[] {7, 0, 0, 0, 0, 0, 0, 0}); // int64 7, little-endian
        assertEquals(String.format("%08x", crc.getValue()), sums.get("bn.num_batches_tracked").textValue());
        assertEquals(List.of("conv.weight", "bn.num_batches_tracked", "fc.bias"), iterable(sums.fieldNames()));

        assertEquals(Map.of("format", "pt"), SafeTensors.loadMetadata(file), "the checksums are the format's, not the user's");
        try (var scope = Tensors.scope()) {
            assertArrayEquals(new float[] {1f, 2f, 3f}, SafeTensors.loadFile(file).get("fc.bias").toFloatArray());
            IllegalArgumentException reserved = assertThrows(IllegalArgumentException.class, () -> SafeTensors.saveFile(
                    Map.of("w", Tensor.scalar(1f)), dir.resolve("x"), Map.of(SafeTensorsHeader.CHECKSUMS_KEY, "{}")));
            assertTrue(reserved.getMessage().contains("'" + SafeTensorsHeader.CHECKSUMS_KEY + "' is reserved"),
                    reserved.getMessage());
        }
    }

    private static List<String> iterable(java.util.Iterator<String> it) {
        List<String> out = new java.util.ArrayList<>();
        it.forEachRemaining(out::add);
        return out;
    }

    @Test
    void aFileWithoutChecksumsWrittenByThePythonWriterStillLoads() throws Exception {
        // scripts/golden/safetensors_golden.py wrote it with scripts/golden/safetensors_writer.py (no checksums)
        Path file = Path.of(getClass().getResource("/golden/convnet_state_dict.safetensors").toURI());
        assertFalse(header(Files.readAllBytes(file)).path("__metadata__").has(SafeTensorsHeader.CHECKSUMS_KEY));
        try (var scope = Tensors.scope()) {
            Map<String, Tensor> tensors = SafeTensors.loadFile(file);
            assertTrue(tensors.containsKey("fc.weight"), tensors.keySet().toString());
        }
    }

    @Test
    void aMalformedChecksumEntryIsNamed() throws IOException {
        String header = "{\"__metadata__\":{\"" + SafeTensorsHeader.CHECKSUMS_KEY + "\":\"{\\\"x\\\":\\\"zz\\\"}\"},"
                + "\"x\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}";
        byte[] json = header.getBytes(StandardCharsets.UTF_8);
        Path file = dir.resolve("bad-sums.safetensors");
        Files.write(file, ByteBuffer.allocate(8 + json.length + 4).order(ByteOrder.LITTLE_ENDIAN).putLong(json.length)
                .put(json).array());
        UncheckedIOException e = assertThrows(UncheckedIOException.class, () -> SafeTensors.loadMetadata(file));
        assertTrue(e.getMessage().contains(file + ": metadata '" + SafeTensorsHeader.CHECKSUMS_KEY + "'"), e.getMessage());
        assertTrue(e.getMessage().contains("'x'"), e.getMessage());
    }
}
