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
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Arrays;
import java.util.Map;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Headers anywhere up to the safetensors limit (100,000,000 bytes) are read, however their bytes
 * are spent (one long metadata string, a long tensor name), and one past it is refused naming the
 * limit. Jackson's default limits (20 MB strings, 50,000-character names) once refused such
 * headers as "not valid JSON". The files are built here; nothing big is committed.
 */
class SafeTensorsLargeHeaderTest {
    @TempDir
    Path dir;

    /** A file built by {@link #fileWithHeaderOf} and the length of its metadata string. */
    private record Built(Path file, long noteChars) {}

    /**
     * Writes a file whose header is {@code {"__metadata__":{"note":"xxx..."},NAME:{one float32}}}
     * padded with spaces to exactly {@code headerBytes}, followed by the float 1.5.
     */
    private Built fileWithHeaderOf(long headerBytes, String tensorName) throws IOException {
        byte[] head = "{\"__metadata__\":{\"note\":\"".getBytes(StandardCharsets.UTF_8);
        byte[] tail = ("\"},\"" + tensorName + "\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}")
                .getBytes(StandardCharsets.UTF_8);
        long noteChars = headerBytes - head.length - tail.length - 8; // 8 spaces of padding, as a writer may add
        Path file = dir.resolve("large-header.safetensors");
        try (FileChannel out = FileChannel.open(file, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
            ByteBuffer length = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(0, headerBytes);
            out.write(length);
            out.write(ByteBuffer.wrap(head));
            byte[] chunk = new byte[1 << 20];
            Arrays.fill(chunk, (byte) 'x');
            for (long left = noteChars; left > 0; left -= chunk.length) {
                out.write(ByteBuffer.wrap(chunk, 0, (int) Math.min(chunk.length, left)));
            }
            out.write(ByteBuffer.wrap(tail));
            out.write(ByteBuffer.wrap("        ".getBytes(StandardCharsets.US_ASCII)));
            out.write(ByteBuffer.allocate(4).order(ByteOrder.LITTLE_ENDIAN).putFloat(0, 1.5f));
        }
        return new Built(file, noteChars);
    }

    @Test
    void aHeaderOfExactlyTheFormatsLimitIsRead() throws IOException {
        String longName = "block." + "n".repeat(60_000) + ".weight"; // above Jackson's default 50,000-character names
        Built built = fileWithHeaderOf(SafeTensorsHeader.MAX_HEADER_BYTES, longName);
        Path file = built.file();
        Map<String, String> metadata = SafeTensors.loadMetadata(file);
        assertEquals(built.noteChars(), metadata.get("note").length(), "the whole metadata string, almost 100 MB");
        try (var scope = Tensors.scope()) {
            Map<String, Tensor> tensors = SafeTensors.loadFile(file);
            assertEquals(java.util.List.of(longName), java.util.List.copyOf(tensors.keySet()));
            assertArrayEquals(new float[] {1.5f}, tensors.get(longName).toFloatArray());
        }
    }

    @Test
    void aHeaderOnePastTheLimitIsRefusedNamingTheLimit() throws IOException {
        // a sparse file: the length field says 100,000,008 and the file is long enough to hold it
        Path file = dir.resolve("too-large.safetensors");
        long n = SafeTensorsHeader.MAX_HEADER_BYTES + 8;
        try (FileChannel out = FileChannel.open(file, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
            out.write(ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(0, n));
            out.write(ByteBuffer.wrap(new byte[] {' '}), 8 + n - 1);
        }
        UncheckedIOException e = assertThrows(UncheckedIOException.class, () -> SafeTensors.loadFile(file));
        assertInstanceOf(SafeTensorsFormatException.class, e.getCause());
        assertTrue(e.getMessage().contains(file + ": header length 100000008 exceeds the safetensors limit of"
                + " 100000000 bytes"), e.getMessage());
    }

    @Test
    void aWriterThatWouldPassTheLimitIsRefusedBeforeWriting() {
        Path file = dir.resolve("would-be-too-large.safetensors");
        try (var scope = Tensors.scope()) {
            Map<String, String> metadata = Map.of("note", "x".repeat((int) SafeTensorsHeader.MAX_HEADER_BYTES));
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> SafeTensors.saveFile(Map.of("w", Tensor.scalar(1f)), file, metadata));
            assertTrue(e.getMessage().contains("exceeds the safetensors limit of 100000000 bytes"), e.getMessage());
            assertTrue(!java.nio.file.Files.exists(file), "nothing is written");
        }
    }
}
