package org.ddp4j.launch;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.ddp4j.internal.AtomicFiles;

/**
 * A launcher's folder for what its workers leave for it: one error file per worker and attempt
 * ({@link org.ddp4j.distributed.ErrorFile}). Made in the temporary directory when the launcher
 * starts and deleted when it ends; a launcher that cannot make it runs on without error files
 * (it then reads its workers' stderr, as for a worker that wrote no file).
 */
final class RunFolder {
    private final Path dir;

    private RunFolder(Path dir) {
        this.dir = dir;
    }

    /** A new, empty folder; null when none can be made. */
    static RunFolder create() {
        try {
            return new RunFolder(Files.createTempDirectory("ddp4j-run-"));
        } catch (IOException | RuntimeException e) {
            Notices.warn(System.err, "cannot make a folder for the workers' error files (" + e
                    + "); their failures are read from their stderr");
            return null;
        }
    }

    /** Where global rank {@code rank} records its failure in attempt {@code attempt}. */
    Path errorFile(int attempt, int rank) {
        return dir.resolve("attempt-" + attempt + "-rank-" + rank + "-error.json");
    }

    /** Deletes the folder and what is in it; best effort. */
    void delete() {
        AtomicFiles.deleteTree(dir); // a folder left in the temporary directory is harmless
    }
}
