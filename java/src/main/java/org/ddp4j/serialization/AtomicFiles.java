package org.ddp4j.serialization;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;

/**
 * Writes a file so that a crash at any moment leaves either the old file or the complete new one,
 * never part of one: the bytes go to a temporary file in the same folder, which is flushed to
 * disk ({@code fsync}), renamed over the target in one step ({@code rename(2)}, atomic within a
 * file system) and then the folder itself is flushed so that the rename survives a power cut.
 */
public final class AtomicFiles {
    private AtomicFiles() {}

    /** Writes the content of a file into an open channel positioned at 0. */
    @FunctionalInterface
    public interface ChannelWriter {
        void writeTo(FileChannel channel) throws IOException;
    }

    /**
     * Replaces (or creates) {@code target} with what {@code writer} writes, atomically. When the
     * writer or any step fails, the temporary file is deleted and {@code target} is untouched.
     *
     * @param target the file to write; its folder must exist
     * @throws UncheckedIOException naming the target when its folder is missing or any write,
     *     flush or rename fails (the writer's IOException is the cause)
     * @throws RuntimeException whatever unchecked exception the writer throws, after cleaning up
     */
    public static void write(Path target, ChannelWriter writer) {
        Path absolute = target.toAbsolutePath();
        Path dir = absolute.getParent();
        if (dir == null || !Files.isDirectory(dir)) {
            throw new UncheckedIOException(new IOException("cannot write " + target + ": the folder " + dir
                    + " does not exist; create it first"));
        }
        Path temp = null;
        try {
            // Same folder as the target: a rename across file systems would not be atomic.
            temp = Files.createTempFile(dir, "." + absolute.getFileName() + ".", ".tmp");
            try (FileChannel channel = FileChannel.open(temp, StandardOpenOption.WRITE, StandardOpenOption.TRUNCATE_EXISTING)) {
                writer.writeTo(channel);
                channel.force(true);
            }
            Files.move(temp, absolute, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
            temp = null;
            forceDirectory(dir);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write " + target + ": " + e.getMessage(), e);
        } finally {
            if (temp != null) {
                try {
                    Files.deleteIfExists(temp);
                } catch (IOException ignored) {
                    // the original failure is what the caller needs to see
                }
            }
        }
    }

    /** Flushes a folder's entries (the rename) to disk; Linux allows fsync on a folder opened for reading. */
    private static void forceDirectory(Path dir) throws IOException {
        try (FileChannel channel = FileChannel.open(dir, StandardOpenOption.READ)) {
            channel.force(true);
        }
    }
}
