package org.ddp4j.testing;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/** Files of the repository a test reads (the README, sources), found from the folder of the module under test. */
public final class RepoFiles {
    private RepoFiles() {}

    /**
     * {@code relative} under the repository root: the parent of java/ (where Maven runs ddp4j's tests), or the
     * grandparent of java/spark and java/examples.
     *
     * @throws IllegalStateException when the file is not there
     */
    public static Path path(String relative) {
        for (Path root : new Path[] {Path.of(".."), Path.of("../.."), Path.of(".")}) {
            Path p = root.resolve(relative);
            if (Files.exists(p) && Files.exists(root.resolve("CMakeLists.txt"))) {
                return p.normalize();
            }
        }
        throw new IllegalStateException(relative + " not found from " + Path.of("").toAbsolutePath());
    }

    /** The main source folders of the library, ddp4j-spark and ddp4j-examples, for checks over every source. */
    public static List<Path> mainSources() {
        return List.of(path("java/src/main/java"), path("java/spark/src/main/java"), path("java/examples/src/main/java"));
    }
}
