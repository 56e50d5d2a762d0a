package org.ddp4j.data;

import java.io.BufferedInputStream;
import java.io.ByteArrayOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.zip.GZIPInputStream;
import java.util.zip.ZipException;

/**
 * An IDX file (the MNIST format): a header with the element type and dimensions, then unsigned
 * bytes. Gzipped files are recognised by their magic bytes, whatever their name.
 *
 * @param dims the sizes, e.g. [60000, 28, 28] for images or [60000] for labels
 * @param data the unsigned bytes, row-major
 */
public record IdxFile(int[] dims, byte[] data) {
    private static final int UNSIGNED_BYTE = 0x08;

    /**
     * Reads an IDX file of unsigned bytes.
     *
     * @throws IOException naming the path and what was wrong: missing, not IDX, a type other than
     *     unsigned byte, truncated (bytes expected and found), or a corrupt gzip stream
     */
    public static IdxFile read(Path path) throws IOException {
        byte[] bytes;
        try {
            bytes = readMaybeGzipped(path);
        } catch (NoSuchFileException e) {
            throw new NoSuchFileException(path.toString(), null, "IDX file not found");
        } catch (ZipException | EOFException e) {
            throw new IOException(path + ": corrupt or truncated gzip stream (" + e.getMessage()
                    + "); download or reinstall the data set", e);
        }
        if (bytes.length < 4) {
            throw new IOException(path + ": truncated IDX file: " + bytes.length + " bytes, expected at least a 4-byte header");
        }
        ByteBuffer buf = ByteBuffer.wrap(bytes);
        int zero = buf.getShort() & 0xffff;
        int type = buf.get() & 0xff;
        int ndim = buf.get() & 0xff;
        if (zero != 0) {
            throw new IOException(path + ": not an IDX file (first two bytes must be 0, got 0x" + Integer.toHexString(zero) + ")");
        }
        if (type != UNSIGNED_BYTE) {
            throw new IOException(path + ": IDX element type 0x" + Integer.toHexString(type)
                    + " is not supported; expected 0x08 (unsigned byte), as in MNIST and Fashion-MNIST");
        }
        if (ndim == 0 || bytes.length < 4 + 4 * ndim) {
            throw new IOException(path + ": truncated IDX header: " + ndim + " dimensions need " + (4 + 4 * ndim)
                    + " bytes, file has " + bytes.length);
        }
        int[] dims = new int[ndim];
        long count = 1;
        for (int i = 0; i < ndim; i++) {
            dims[i] = buf.getInt();
            if (dims[i] < 0) {
                throw new IOException(path + ": IDX dimension " + i + " is negative (" + dims[i] + ")");
            }
            count *= dims[i];
        }
        long available = bytes.length - 4L - 4L * ndim;
        if (available < count) {
            throw new IOException(path + ": truncated IDX file: dimensions " + Arrays.toString(dims) + " need " + count
                    + " data bytes, found " + available);
        }
        byte[] data = Arrays.copyOfRange(bytes, 4 + 4 * ndim, Math.toIntExact(4 + 4L * ndim + count));
        return new IdxFile(dims, data);
    }

    private static byte[] readMaybeGzipped(Path path) throws IOException {
        try (InputStream raw = new BufferedInputStream(Files.newInputStream(path))) {
            raw.mark(2);
            int b0 = raw.read();
            int b1 = raw.read();
            raw.reset();
            if (b0 == 0x1f && b1 == 0x8b) {
                try (InputStream gz = new GZIPInputStream(raw, 1 << 16)) {
                    ByteArrayOutputStream out = new ByteArrayOutputStream(1 << 20);
                    gz.transferTo(out);
                    return out.toByteArray();
                }
            }
            return raw.readAllBytes();
        }
    }
}
