package org.ddp4j.serialization;

import java.io.EOFException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.zip.CRC32;
import org.ddp4j.internal.AtomicFiles;
import org.ddp4j.tensor.DType;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;

/**
 * Reads and writes tensors in the safetensors format, the library Hugging Face made and PyTorch
 * users share checkpoints in; mirrors {@code safetensors.torch.save_file} / {@code load_file}.
 *
 * <p>The layout: 8 bytes, a little-endian unsigned length N; N bytes of UTF-8 JSON,
 * {@code {"__metadata__": {string: string}, name: {"dtype": "F32"|"I64"|"BF16"|"F16", "shape": [..],
 * "data_offsets": [begin, end]}, ...}}, padded with spaces so that the data starts at a multiple
 * of 8 bytes; then each tensor's elements, row-major, little-endian, back to back in the order of
 * the map, the file ending exactly where the last tensor ends. Offsets count from the start of
 * the data.
 *
 * <p>Integrity, beyond PyTorch: ddp4j also writes the CRC-32 of each tensor's bytes into the
 * metadata (key {@code ddp4j.crc32}, a JSON object as a string, so other readers still read the
 * file) and {@link #loadFile} checks it, so a bit that flipped on disk or in a copy is reported
 * by tensor instead of loading as a wrong value. Files without it (PyTorch's) load unchecked.
 *
 * <p>A checkpoint of a module and back, as {@code torch.save(model.state_dict(), f)} and
 * {@code model.load_state_dict(torch.load(f))}:
 *
 * <pre>{@code
 * SafeTensors.saveFile(model.stateDict(), Path.of("model.safetensors"));
 * try (var scope = Tensors.scope()) { // frees the loaded copies
 *     model.loadStateDict(SafeTensors.loadFile(Path.of("model.safetensors")));
 * }
 * }</pre>
 */
public final class SafeTensors {
    private SafeTensors() {}

    /** Saves {@code tensors} with no metadata; see {@link #saveFile(Map, Path, Map)}. */
    public static void saveFile(Map<String, Tensor> tensors, Path file) {
        saveFile(tensors, file, Map.of());
    }

    /**
     * Writes {@code tensors} (float32, int64, bfloat16 or float16, on any device) and {@code metadata} to {@code file}
     * in the safetensors format, atomically (see {@link AtomicFiles}): a crash or failure leaves
     * the previous file, or none, never part of one. Each tensor's CRC-32 goes into the metadata
     * too (see the class comment). Mirrors {@code safetensors.torch.save_file}.
     *
     * @param tensors name to tensor; the data is laid out in the map's iteration order
     * @param metadata strings stored in the header's {@code __metadata__}
     * @throws IllegalArgumentException if a name is {@code __metadata__}, a metadata key is
     *     {@code ddp4j.crc32}, a key or value is null, or the header would exceed the format's
     *     100,000,000 bytes
     * @throws IllegalStateException if a tensor is closed (nothing is written)
     * @throws UncheckedIOException naming the file when it cannot be written
     */
    public static void saveFile(Map<String, Tensor> tensors, Path file, Map<String, String> metadata) {
        SafeTensorsHeader header = SafeTensorsHeader.forTensors(tensors, metadata);
        Map<String, Long> zeros = new LinkedHashMap<>();
        tensors.keySet().forEach(name -> zeros.put(name, 0L));
        int headerBytes = header.encode(zeros).length; // the same with the real checksums: 8 hex digits each
        AtomicFiles.write(file, channel -> {
            // the data first, each tensor's checksum taken from the bytes written; then the header in front of it
            channel.position(headerBytes);
            Map<String, Long> checksums = new LinkedHashMap<>();
            for (Map.Entry<String, Tensor> e : tensors.entrySet()) {
                ByteBuffer bytes = littleEndianBytes(e.getValue());
                checksums.put(e.getKey(), crc32(bytes));
                writeFully(channel, bytes);
            }
            byte[] encoded = header.encode(checksums);
            if (encoded.length != headerBytes) {
                throw new IllegalStateException("safetensors: the header changed length (" + headerBytes + " to "
                        + encoded.length + " bytes) between encodings");
            }
            ByteBuffer head = ByteBuffer.wrap(encoded);
            while (head.hasRemaining()) {
                channel.write(head, head.position());
            }
        });
    }

    /** The CRC-32 of a buffer's remaining bytes, as java.util.zip and Python's zlib.crc32 compute it. */
    private static long crc32(ByteBuffer bytes) {
        CRC32 crc = new CRC32();
        crc.update(bytes.duplicate());
        return crc.getValue();
    }

    private static ByteBuffer littleEndianBytes(Tensor t) {
        ByteBuffer out = ByteBuffer.allocate(Math.toIntExact(t.numel() * t.dtype().bytes())).order(ByteOrder.LITTLE_ENDIAN);
        switch (t.dtype()) {
            case FLOAT32 -> out.asFloatBuffer().put(t.toFloatArray());
            case INT64 -> out.asLongBuffer().put(t.toLongArray());
            case BFLOAT16, FLOAT16 -> out.asShortBuffer().put(t.toBitsArray());
            case BOOL -> {
                for (boolean b : t.toBooleanArray()) {
                    out.put((byte) (b ? 1 : 0));
                }
                out.rewind();
            }
        }
        return out;
    }

    private static void writeFully(FileChannel channel, ByteBuffer buffer) throws IOException {
        while (buffer.hasRemaining()) {
            channel.write(buffer);
        }
    }

    /**
     * Reads every tensor of a safetensors file into new CPU tensors (F32, I64, BF16 and F16 become
     * float32, int64, bfloat16 and float16), which join
     * the current {@link org.ddp4j.tensor.Tensors#scope()} if there is one. Mirrors
     * {@code safetensors.torch.load_file}. The whole file is validated first (see
     * {@link #loadMetadata}), and each tensor whose CRC-32 the file records (ddp4j's files do,
     * PyTorch's do not) is checked against it.
     *
     * @return name to tensor, in the order of the data in the file
     * @throws UncheckedIOException naming the file when it is missing or unreadable, or, with a
     *     {@link SafeTensorsFormatException} as cause, naming the file, the tensor and the problem
     *     when it is not a valid safetensors file, holds a dtype other than F32, I64, BF16 and F16, or a
     *     tensor's bytes do not match its recorded checksum
     */
    public static Map<String, Tensor> loadFile(Path file) {
        try (FileChannel channel = open(file)) {
            SafeTensorsHeader header = readHeader(file, channel);
            long dataStart = channel.position();
            Map<String, Tensor> out = new LinkedHashMap<>();
            for (SafeTensorsHeader.Entry e : header.entries()) {
                long bytes = e.end() - e.begin();
                if (bytes > Integer.MAX_VALUE - 8) {
                    throw new SafeTensorsFormatException(file + ": tensor '" + e.name() + "' holds " + bytes
                            + " bytes; ddp4j reads tensors of up to 2 GiB");
                }
                ByteBuffer data = ByteBuffer.allocate((int) bytes).order(ByteOrder.LITTLE_ENDIAN);
                readFully(file, channel, data, dataStart + e.begin());
                data.flip();
                Long recorded = header.checksums().get(e.name());
                long actual = recorded == null ? 0 : crc32(data);
                if (recorded != null && recorded != actual) {
                    throw new SafeTensorsFormatException(String.format("%s: tensor '%s' does not match its CRC-32 checksum"
                            + " (recorded %08x, its bytes give %08x): the file changed after it was written (a disk or"
                            + " copy error, or an edit); use an intact copy", file, e.name(), recorded, actual));
                }
                out.put(e.name(), tensorOf(e, data));
            }
            return out;
        } catch (IOException e) {
            throw unchecked(file, e);
        }
    }

    /** A CPU tensor of the entry's dtype and shape holding data's little-endian elements. */
    private static Tensor tensorOf(SafeTensorsHeader.Entry e, ByteBuffer data) {
        int n = (int) e.numel();
        return switch (e.dtype()) {
            case FLOAT32 -> {
                float[] values = new float[n];
                data.asFloatBuffer().get(values);
                yield Tensor.of(values, e.shape());
            }
            case INT64 -> {
                long[] values = new long[n];
                data.asLongBuffer().get(values);
                yield Tensor.ofLongs(values, e.shape());
            }
            case BFLOAT16, FLOAT16 -> {
                short[] bits = new short[n];
                data.asShortBuffer().get(bits);
                yield Tensor.ofBits(bits, e.dtype(), e.shape());
            }
            case BOOL -> {
                boolean[] values = new boolean[n];
                for (int i = 0; i < n; i++) {
                    values[i] = data.get(data.position() + i) != 0;
                }
                yield Tensors.ofBooleans(values, e.shape());
            }
        };
    }

    /**
     * The {@code __metadata__} strings of a safetensors file (empty when it has none), after
     * validating its header against the file's size: the header length fits the file, the header
     * is a JSON object whose tensors have known dtypes, shapes matching their data_offsets, and
     * offsets that tile the data section with no overlap, gap or trailing bytes. Mirrors
     * {@code safe_open(file).metadata()}.
     *
     * @throws UncheckedIOException as {@link #loadFile}
     */
    public static Map<String, String> loadMetadata(Path file) {
        try (FileChannel channel = open(file)) {
            return readHeader(file, channel).metadata();
        } catch (IOException e) {
            throw unchecked(file, e);
        }
    }

    private static FileChannel open(Path file) throws IOException {
        try {
            return FileChannel.open(file, StandardOpenOption.READ);
        } catch (NoSuchFileException e) {
            throw new NoSuchFileException(file + ": no such file");
        }
    }

    private static UncheckedIOException unchecked(Path file, IOException e) {
        // Ours and the file system's "no such file" name the file already.
        String message = e instanceof SafeTensorsFormatException || e instanceof NoSuchFileException ? e.getMessage()
                : "cannot read " + file + ": " + e;
        return new UncheckedIOException(message, e);
    }

    /** Reads and validates the header; leaves the channel at the start of the data. */
    private static SafeTensorsHeader readHeader(Path file, FileChannel channel) throws IOException {
        long size = channel.size();
        if (size < 8) {
            throw new SafeTensorsFormatException(file + ": " + size + " bytes is too short for a safetensors file"
                    + " (it starts with an 8-byte header length)");
        }
        ByteBuffer lengthBytes = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN);
        readFully(file, channel, lengthBytes, 0);
        long n = lengthBytes.getLong(0);
        if (n < 0 || n > size - 8) {
            throw new SafeTensorsFormatException(file + ": header length " + Long.toUnsignedString(n)
                    + " is beyond the end of the file (" + size + " bytes): not a safetensors file, or a truncated one");
        }
        if (n > SafeTensorsHeader.MAX_HEADER_BYTES) {
            throw new SafeTensorsFormatException(file + ": header length " + n + " exceeds the safetensors limit of "
                    + SafeTensorsHeader.MAX_HEADER_BYTES + " bytes");
        }
        ByteBuffer json = ByteBuffer.allocate((int) n);
        readFully(file, channel, json, 8);
        channel.position(8 + n);
        return SafeTensorsHeader.parse(file, json.array(), size - 8 - n);
    }

    private static void readFully(Path file, FileChannel channel, ByteBuffer buffer, long position) throws IOException {
        long at = position;
        while (buffer.hasRemaining()) {
            int read = channel.read(buffer, at);
            if (read < 0) {
                throw new EOFException(file + ": unexpected end of file at byte " + at);
            }
            at += read;
        }
    }
}
