package org.ddp4j.data;

import java.io.BufferedInputStream;
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
        try (InputStream in = open(path)) {
            return read(path, in);
        } catch (NoSuchFileException e) {
            throw new NoSuchFileException(path.toString(), null, "IDX file not found");
        } catch (ZipException | EOFException e) {
            throw new IOException(path + ": corrupt or truncated gzip stream (" + e.getMessage()
                    + "); download or reinstall the data set", e);
        }
    }

    /**
     * Parses the header, then reads the data straight into an array of the exact size: the
     * decompressed file is never held twice (60000 MNIST images are 47 MB).
     */
    private static IdxFile read(Path path, InputStream in) throws IOException {
        byte[] header = in.readNBytes(4);
        if (header.length < 4) {
            throw new IOException(path + ": truncated IDX file: " + header.length + " bytes, expected at least a 4-byte header");
        }
        ByteBuffer buf = ByteBuffer.wrap(header);
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
        byte[] dimBytes = ndim == 0 ? new byte[0] : in.readNBytes(4 * ndim);
        if (ndim == 0 || dimBytes.length < 4 * ndim) {
            throw new IOException(path + ": truncated IDX header: " + ndim + " dimensions need " + (4 + 4 * ndim)
                    + " bytes, file has " + (4 + dimBytes.length));
        }
        ByteBuffer dimBuf = ByteBuffer.wrap(dimBytes);
        int[] dims = new int[ndim];
        long count = 1;
        for (int i = 0; i < ndim; i++) {
            dims[i] = dimBuf.getInt();
            if (dims[i] < 0) {
                throw new IOException(path + ": IDX dimension " + i + " is negative (" + dims[i] + ")");
            }
            count *= dims[i]; // at most (2^31)^2 before the check below: no long overflow
            if (count > Integer.MAX_VALUE - 8) {
                // Later dimensions are still unread: name the header as far as it was read.
                throw new IOException(path + ": IDX header " + Arrays.toString(Arrays.copyOf(dims, i + 1))
                        + (i + 1 < ndim ? " (first " + (i + 1) + " of " + ndim + " dimensions)" : "") + " holds more than "
                        + (Integer.MAX_VALUE - 8) + " bytes, more than one Java array can: a corrupt header, or not an"
                        + " IDX file of single bytes");
            }
        }
        byte[] data = in.readNBytes((int) count);
        if (data.length < count) {
            throw new IOException(path + ": truncated IDX file: dimensions " + Arrays.toString(dims) + " need " + count
                    + " data bytes, found " + data.length);
        }
        return new IdxFile(dims, data);
    }

    /** The file's bytes, decompressed on the fly when it starts with gzip's magic bytes. */
    private static InputStream open(Path path) throws IOException {
        InputStream raw = new BufferedInputStream(Files.newInputStream(path), 1 << 16);
        try {
            raw.mark(2);
            int b0 = raw.read();
            int b1 = raw.read();
            raw.reset();
            return b0 == 0x1f && b1 == 0x8b ? new GZIPInputStream(raw, 1 << 16) : raw;
        } catch (IOException | RuntimeException e) {
            raw.close();
            throw e;
        }
    }
}
