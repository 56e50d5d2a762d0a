package org.ddp4j.serialization;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

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
import java.util.stream.Stream;
import org.ddp4j.internal.AtomicFiles;
import org.ddp4j.tensor.DType;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The safetensors format byte for byte, its validation on reading, and atomic writing. */
class SafeTensorsTest {
    @TempDir
    Path dir;

    @Test
    void roundTripKeepsNamesOrderShapesDtypesValuesAndMetadata() {
        Path file = dir.resolve("t.safetensors");
        try (var scope = Tensors.scope()) {
            Map<String, Tensor> tensors = new LinkedHashMap<>();
            tensors.put("w", Tensor.of(new float[] {1f, -2.5f, Float.MIN_VALUE, Float.MAX_VALUE, -0f, 3e-38f}, 2, 3));
            tensors.put("count", Tensor.ofLongs(new long[] {Long.MIN_VALUE + 1}));
            tensors.put("scalar", Tensor.of(new float[] {7f}));
            tensors.put("empty", Tensor.of(new float[0], 0, 4));
            tensors.put("idx", Tensor.ofLongs(new long[] {0, -1, Long.MAX_VALUE, 42}, 2, 2));
            tensors.put("mask", Tensors.ofBooleans(new boolean[] {true, false, false, true, true}, 5));
            SafeTensors.saveFile(tensors, file, Map.of("epoch", "3", "note", "ünïcode \"quoted\""));

            Map<String, Tensor> back = SafeTensors.loadFile(file);
            assertEquals(List.copyOf(tensors.keySet()), List.copyOf(back.keySet()));
            tensors.forEach((name, t) -> {
                Tensor r = back.get(name);
                assertEquals(t.dtype(), r.dtype(), name);
                assertArrayEquals(t.shape(), r.shape(), name);
                if (t.dtype() == DType.FLOAT32) {
                    assertArrayEquals(bits(t.toFloatArray()), bits(r.toFloatArray()), name);
                } else if (t.dtype() == DType.BOOL) {
                    assertArrayEquals(t.toBooleanArray(), r.toBooleanArray(), name);
                } else {
                    assertArrayEquals(t.toLongArray(), r.toLongArray(), name);
                }
            });
            assertEquals(Map.of("epoch", "3", "note", "ünïcode \"quoted\""), SafeTensors.loadMetadata(file));
        }
    }

    private static int[] bits(float[] values) {
        int[] out = new int[values.length];
        for (int i = 0; i < values.length; i++) {
            out[i] = Float.floatToRawIntBits(values[i]);
        }
        return out;
    }

    @Test
    void layoutIsLengthThenPaddedJsonThenLittleEndianDataEndingAtTheLastTensor() throws IOException {
        Path file = dir.resolve("layout.safetensors");
        try (var scope = Tensors.scope()) {
            Map<String, Tensor> tensors = new LinkedHashMap<>();
            tensors.put("a", Tensor.of(new float[] {1f, 2f}, 2));
            tensors.put("b", Tensor.ofLongs(new long[] {258}, 1));
            SafeTensors.saveFile(tensors, file);
        }
        byte[] bytes = Files.readAllBytes(file);
        ByteBuffer buf = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN);
        long n = buf.getLong(0);
        assertEquals(0, (8 + n) % 8, "data must start 8-byte aligned");
        String json = new String(bytes, 8, (int) n, StandardCharsets.UTF_8);
        // ddp4j's checksums (CRC-32 of [1f, 2f] and of 258L, little-endian) ride in the metadata
        assertEquals("{\"__metadata__\":{\"ddp4j.crc32\":\"{\\\"a\\\":\\\"" + crc32(buf, 0, 8) + "\\\",\\\"b\\\":\\\""
                + crc32(buf, 8, 16) + "\\\"}\"},"
                + "\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                + "\"b\":{\"dtype\":\"I64\",\"shape\":[1],\"data_offsets\":[8,16]}}", json.stripTrailing());
        assertTrue(json.substring(json.stripTrailing().length()).chars().allMatch(c -> c == ' '), "padding is spaces");
        assertEquals(8 + n + 16, bytes.length, "the file ends exactly at the last tensor");
        int data = (int) (8 + n);
        assertEquals(1f, buf.getFloat(data));
        assertEquals(2f, buf.getFloat(data + 4));
        assertEquals(258L, buf.getLong(data + 8));
        assertEquals((byte) 0x02, bytes[data + 8], "little-endian: least significant byte first");
        assertEquals((byte) 0x01, bytes[data + 9]);
    }

    /** The CRC-32 of data bytes [begin, end) of the file in buf, as 8 hex digits. */
    private static String crc32(ByteBuffer buf, int begin, int end) {
        int data = (int) (8 + buf.getLong(0));
        java.util.zip.CRC32 crc = new java.util.zip.CRC32();
        crc.update(buf.array(), data + begin, end - begin);
        return String.format("%08x", crc.getValue());
    }

    /** Writes a file with the given JSON header (unpadded) and data bytes. */
    private Path craft(String name, String header, int dataBytes) throws IOException {
        byte[] json = header.getBytes(StandardCharsets.UTF_8);
        ByteBuffer out = ByteBuffer.allocate(8 + json.length + dataBytes).order(ByteOrder.LITTLE_ENDIAN);
        out.putLong(json.length).put(json);
        Path file = dir.resolve(name);
        Files.write(file, out.array());
        return file;
    }

    private static String loadError(Path file) {
        UncheckedIOException e = assertThrows(UncheckedIOException.class, () -> SafeTensors.loadFile(file));
        assertInstanceOf(SafeTensorsFormatException.class, e.getCause(), e.toString());
        assertTrue(e.getMessage().startsWith(file.toString()), "the message names the file: " + e.getMessage());
        return e.getMessage();
    }

    private static void assertContains(String text, String... parts) {
        for (String part : parts) {
            assertTrue(text.contains(part), "expected '" + part + "' in: " + text);
        }
    }

    @Test
    void readingRejectsMalformedFilesNamingFileAndTensor() throws IOException {
        String ok = "{\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}";
        assertContains(loadError(craft("good-but-truncated", ok, 4)), "tensor 'x'", "beyond the end of the data section (4 bytes)");
        assertContains(loadError(craft("trailing", ok, 12)), "end at data offset 8", "holds 12 bytes", "trailing bytes");

        Path shortFile = dir.resolve("short");
        Files.write(shortFile, new byte[] {1, 2, 3});
        assertContains(loadError(shortFile), "3 bytes is too short");

        Path hugeLength = dir.resolve("huge-length");
        Files.write(hugeLength, ByteBuffer.allocate(16).order(ByteOrder.LITTLE_ENDIAN).putLong(1000).array());
        assertContains(loadError(hugeLength), "header length 1000 is beyond the end of the file (16 bytes)");

        assertContains(loadError(craft("overlap", "{\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                + "\"y\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}", 12)),
                "tensor 'y'", "overlapping tensor 'x'");
        assertContains(loadError(craft("gap", "{\"x\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
                + "\"y\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,12]}}", 12)),
                "tensor 'y' begins at data offset 8", "('x') ends at 4", "gap");
        assertContains(loadError(craft("out-of-range", "{\"x\":{\"dtype\":\"I64\",\"shape\":[2],\"data_offsets\":[0,16]}}", 8)),
                "tensor 'x'", "[0, 16] beyond the end");
        assertContains(loadError(craft("unknown-dtype", "{\"x\":{\"dtype\":\"F33\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8)),
                "tensor 'x'", "unknown dtype \"F33\"");
        assertContains(loadError(craft("f64", "{\"x\":{\"dtype\":\"F64\",\"shape\":[1],\"data_offsets\":[0,8]}}", 8)),
                "tensor 'x'", "dtype F64 is not supported by ddp4j (only F32, I64, BF16, F16 and BOOL)");
        assertContains(loadError(craft("shape-mismatch", "{\"x\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,8]}}", 8)),
                "tensor 'x'", "shape [3] of F32 needs 12 bytes but data_offsets [0, 8] hold 8");
        assertContains(loadError(craft("negative-shape", "{\"x\":{\"dtype\":\"F32\",\"shape\":[-2],\"data_offsets\":[0,8]}}", 8)),
                "tensor 'x'", "\"shape\" must be an array of non-negative integers");
        assertContains(loadError(craft("reversed", "{\"x\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[8,0]}}", 8)),
                "tensor 'x'", "end before they begin");
        assertContains(loadError(craft("no-offsets", "{\"x\":{\"dtype\":\"F32\",\"shape\":[2]}}", 8)),
                "tensor 'x'", "\"data_offsets\" must be an array of 2");
        assertContains(loadError(craft("bad-json", "{\"x\": ", 0)), "not valid JSON");
        assertContains(loadError(craft("not-object", "[1, 2]", 0)), "not a JSON object");
        assertContains(loadError(craft("duplicate", "{\"x\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
                + "\"x\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", 8)), "not valid JSON", "x");
        assertContains(loadError(craft("bad-metadata", "{\"__metadata__\":{\"epoch\":3}}", 0)),
                "__metadata__ value of 'epoch' must be a string");
        // a valid file with no tensors at all
        assertEquals(Map.of(), SafeTensors.loadFile(craft("empty", "{}", 0)));
    }

    @Test
    void aMissingFileIsNamed() {
        Path missing = dir.resolve("nope.safetensors");
        UncheckedIOException e = assertThrows(UncheckedIOException.class, () -> SafeTensors.loadFile(missing));
        assertContains(e.getMessage(), missing.toString(), "no such file");
    }

    @Test
    void theMetadataNameIsReserved() {
        try (var scope = Tensors.scope()) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> SafeTensors.saveFile(Map.of("__metadata__", Tensor.scalar(1f)), dir.resolve("x")));
            assertContains(e.getMessage(), "'__metadata__' is reserved");
        }
    }

    private List<Path> filesIn(Path folder) throws IOException {
        try (Stream<Path> s = Files.list(folder)) {
            return s.sorted().toList();
        }
    }

    @Test
    void aFailureMidWriteLeavesTheOldFileIntactAndNoTempFile() throws IOException {
        Path file = dir.resolve("ckpt.safetensors");
        try (var scope = Tensors.scope()) {
            SafeTensors.saveFile(Map.of("w", Tensor.of(new float[] {1f, 2f}, 2)), file);
        }
        byte[] before = Files.readAllBytes(file);

        // The second tensor is closed: the header and the first tensor's bytes are already written when it fails.
        Map<String, Tensor> tensors = new LinkedHashMap<>();
        Tensor big = Tensor.of(new float[1 << 16], 1 << 16).keep();
        Tensor closed = Tensor.of(new float[] {3f}, 1).keep();
        closed.close();
        tensors.put("big", big);
        tensors.put("closed", closed);
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> SafeTensors.saveFile(tensors, file));
        assertContains(e.getMessage(), "is closed");
        big.close();
        assertArrayEquals(before, Files.readAllBytes(file), "the old checkpoint must survive a failed save");
        assertEquals(List.of(file), filesIn(dir), "no temporary file may be left behind");

        // The same through AtomicFiles directly, failing with an I/O error after part of the content.
        UncheckedIOException io = assertThrows(UncheckedIOException.class, () -> AtomicFiles.write(file, channel -> {
            channel.write(ByteBuffer.wrap(new byte[4096]));
            throw new IOException("disk full (injected)");
        }));
        assertContains(io.getMessage(), "cannot write " + file, "disk full (injected)");
        assertArrayEquals(before, Files.readAllBytes(file));
        assertEquals(List.of(file), filesIn(dir));

        // And a successful write replaces it whole.
        AtomicFiles.write(file, channel -> channel.write(ByteBuffer.wrap(new byte[] {9})));
        assertArrayEquals(new byte[] {9}, Files.readAllBytes(file));
        assertEquals(List.of(file), filesIn(dir));
    }

    @Test
    void writingIntoAMissingFolderSaysSo() {
        Path file = dir.resolve("no-such-folder").resolve("x.safetensors");
        try (var scope = Tensors.scope()) {
            UncheckedIOException e = assertThrows(UncheckedIOException.class,
                    () -> SafeTensors.saveFile(Map.of("w", Tensor.scalar(1f)), file));
            assertContains(e.getMessage(), "cannot write " + file, "does not exist; create it first");
        }
    }
}
