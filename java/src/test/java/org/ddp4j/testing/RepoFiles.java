package org.ddp4j.testing;

import java.nio.file.Files;
import java.nio.file.Path;

/** Files of the repository a test reads (the README, sources), found from the java/ module's folder. */
public final class RepoFiles {
    private RepoFiles() {}

    /**
     * {@code relative} under the repository root (the parent of the java/ module, where Maven runs the tests).
     *
     * @throws IllegalStateException when the file is not there
     */
    public static Path path(String relative) {
        for (Path root : new Path[] {Path.of(".."), Path.of(".")}) {
            Path p = root.resolve(relative);
            if (Files.exists(p) && Files.exists(root.resolve("CMakeLists.txt"))) {
                return p.normalize();
            }
        }
        throw new IllegalStateException(relative + " not found from " + Path.of("").toAbsolutePath());
    }
}
