package org.ddp4j.internal;

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

    /**
     * Renames {@code from} to {@code to} in one step, replacing {@code to} ({@code rename(2)}), and
     * flushes the folder so that the rename survives a power cut: {@code to} is the old file or the
     * new one, never neither. Used to make a file written beforehand (by {@link #write}) visible
     * under its real name at a moment of the caller's choosing. Both must be in one file system.
     *
     * @throws UncheckedIOException naming both files when the rename or the flush fails
     */
    public static void rename(Path from, Path to) {
        try {
            Files.move(from, to, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
            forceDirectory(to.toAbsolutePath().getParent());
        } catch (IOException e) {
            throw new UncheckedIOException("cannot rename " + from + " to " + to + ": " + e, e);
        }
    }

    /**
     * Makes {@code target} a second name for the content of {@code source}, atomically replacing
     * what {@code target} held: a hard link where the file system has them (no bytes copied, no
     * space needed), else a copy written as {@link #write} does. Later renames over
     * {@code source} leave {@code target} as it was.
     *
     * @throws UncheckedIOException naming both files when neither a link nor a copy can be made
     */
    public static void linkOrCopy(Path source, Path target) {
        Path dir = target.toAbsolutePath().getParent();
        Path temp = dir.resolve("." + target.getFileName() + ".link.tmp");
        try {
            if (Files.exists(target) && Files.isSameFile(source, target)) {
                return; // already a second name for it (rename(2) would leave the temporary link behind)
            }
            Files.deleteIfExists(temp);
            Files.createLink(temp, source);
        } catch (IOException | UnsupportedOperationException e) {
            try {
                Files.deleteIfExists(temp);
            } catch (IOException ignored) {
                // the copy below is what counts
            }
            write(target, channel -> {
                try (FileChannel in = FileChannel.open(source, StandardOpenOption.READ)) {
                    long size = in.size();
                    for (long done = 0; done < size; ) {
                        long n = in.transferTo(done, size - done, channel);
                        if (n <= 0) {
                            throw new IOException(source + " shrank to " + in.size() + " bytes while being copied");
                        }
                        done += n;
                    }
                }
            });
            return;
        }
        try {
            rename(temp, target);
        } catch (UncheckedIOException e) {
            try {
                Files.deleteIfExists(temp);
            } catch (IOException ignored) {
                // the rename's failure is what the caller needs to see
            }
            throw e;
        }
    }

    /** Flushes a folder's entries (the rename) to disk; Linux allows fsync on a folder opened for reading. */
    private static void forceDirectory(Path dir) throws IOException {
        try (FileChannel channel = FileChannel.open(dir, StandardOpenOption.READ)) {
            channel.force(true);
        }
    }

    /**
     * Deletes {@code path} and, for a folder, everything in it, deepest first; best effort: what
     * cannot be deleted stays and nothing is thrown (for folders nothing refers to any more).
     */
    public static void deleteTree(Path path) {
        try (java.util.stream.Stream<Path> walk = Files.walk(path)) {
            walk.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (IOException | java.io.UncheckedIOException e) {
            // best effort
        }
    }
}
