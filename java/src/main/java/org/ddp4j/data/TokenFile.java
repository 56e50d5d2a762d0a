package org.ddp4j.data;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import org.ddp4j.internal.AtomicFiles;

/**
 * A file of token ids in nanoGPT's layout ({@code train.bin} / {@code val.bin}): unsigned 16-bit
 * little-endian ids, one after another, no header, as {@code np.array(ids, dtype=np.uint16).tofile(path)}
 * writes and {@code np.memmap(path, dtype=np.uint16, mode='r')} reads, so files move between nanoGPT
 * and ddp4j. Opened memory-mapped and read-only: the operating system pages the tokens in as they
 * are read, and every process on a machine shares one copy. Files of any length (mapped in 1 GiB
 * pieces). Thread-safe for reading.
 */
public final class TokenFile {
    /** The largest id the layout holds (uint16). */
    public static final int MAX_ID = 65535;

    /** Tokens per mapped piece: 2^29 tokens = 1 GiB (a MappedByteBuffer holds at most 2 GiB). */
    private static final int PIECE_SHIFT = 29;
    private static final long PIECE_TOKENS = 1L << PIECE_SHIFT;

    private final Path path;
    private final long length;
    private final MappedByteBuffer[] pieces;

    private TokenFile(Path path, long length, MappedByteBuffer[] pieces) {
        this.path = path;
        this.length = length;
        this.pieces = pieces;
    }

    /**
     * Writes {@code ids} to {@code path} in nanoGPT's layout, atomically (a temporary file in the same
     * folder, flushed, then renamed over {@code path}: a crash leaves the old file or the new one).
     *
     * @throws IllegalArgumentException naming the first id outside [0, 65535] and its position, before
     *     anything is written
     * @throws UncheckedIOException naming the file when its folder is missing or a write fails
     */
    public static void write(Path path, int[] ids) {
        for (int i = 0; i < ids.length; i++) {
            if (ids[i] < 0 || ids[i] > MAX_ID) {
                throw new IllegalArgumentException("TokenFile.write(" + path + "): id " + ids[i] + " at position " + i
                        + " does not fit nanoGPT's uint16 token files (ids 0.." + MAX_ID + "); use a tokenizer whose"
                        + " vocabulary has at most 65536 ids (\"gpt2\": 50257, \"bytes\": 256)");
            }
        }
        AtomicFiles.write(path, channel -> {
            ByteBuffer buffer = ByteBuffer.allocate(1 << 16).order(ByteOrder.LITTLE_ENDIAN);
            for (int id : ids) {
                if (!buffer.hasRemaining()) {
                    drain(buffer, channel);
                }
                buffer.putShort((short) id);
            }
            drain(buffer, channel);
        });
    }

    private static void drain(ByteBuffer buffer, FileChannel channel) throws IOException {
        buffer.flip();
        while (buffer.hasRemaining()) {
            channel.write(buffer);
        }
        buffer.clear();
    }

    /**
     * Opens a token file memory-mapped, read-only. An empty file has length 0.
     *
     * @throws IllegalArgumentException if the file's size is odd (not uint16 ids: e.g. a text file)
     * @throws UncheckedIOException naming the file when it cannot be opened or mapped
     */
    public static TokenFile open(Path path) {
        try (FileChannel channel = FileChannel.open(path, StandardOpenOption.READ)) {
            long bytes = channel.size();
            if (bytes % 2 != 0) {
                throw new IllegalArgumentException("TokenFile.open(" + path + "): " + bytes + " bytes is an odd size, so"
                        + " the file is not uint16 token ids (nanoGPT's train.bin / val.bin layout); make it with"
                        + " PrepareText or TokenFile.write");
            }
            long length = bytes / 2;
            MappedByteBuffer[] pieces = new MappedByteBuffer[(int) ((length + PIECE_TOKENS - 1) / PIECE_TOKENS)];
            for (int p = 0; p < pieces.length; p++) {
                long first = p * PIECE_TOKENS;
                long count = Math.min(PIECE_TOKENS, length - first);
                pieces[p] = channel.map(FileChannel.MapMode.READ_ONLY, first * 2, count * 2);
                pieces[p].order(ByteOrder.LITTLE_ENDIAN);
            }
            // The mapping stays valid after the channel closes (FileChannel.map's contract).
            return new TokenFile(path, length, pieces);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot open token file " + path + ": " + e.getMessage(), e);
        }
    }

    /** The number of tokens (the file's size in bytes / 2). Mirrors {@code len(np.memmap(...))}. */
    public long length() {
        return length;
    }

    /**
     * The id at position {@code index}, in [0, 65535].
     *
     * @throws IndexOutOfBoundsException if index is not in [0, length())
     */
    public int get(long index) {
        if (index < 0 || index >= length) {
            throw new IndexOutOfBoundsException("token " + index + " of " + path + ", which holds " + length + " tokens");
        }
        // Absolute reads: no buffer position is shared between threads.
        return Short.toUnsignedInt(pieces[(int) (index >>> PIECE_SHIFT)].getShort((int) (index & (PIECE_TOKENS - 1)) * 2));
    }

    /**
     * Copies {@code count} ids starting at {@code start} into {@code dst} from {@code offset}, as longs
     * (int64 is what embeddings and cross-entropy take).
     *
     * @throws IndexOutOfBoundsException if [start, start + count) is not inside the file or dst is too short
     */
    public void copyTo(long start, int count, long[] dst, int offset) {
        if (start < 0 || count < 0 || start > length - count) {
            throw new IndexOutOfBoundsException("tokens [" + start + ", " + (start + count) + ") of " + path
                    + ", which holds " + length + " tokens");
        }
        for (int i = 0; i < count; i++) {
            dst[offset + i] = get(start + i);
        }
    }

    /** The file this reads. */
    public Path path() {
        return path;
    }

    @Override
    public String toString() {
        return "TokenFile(" + path + ", " + length + " tokens)";
    }
}
