package org.ddp4j;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import javax.tools.ToolProvider;
import org.ddp4j.testing.RepoFiles;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Classes that moved keep a deprecated alias at their old import: an app written against an
 * earlier snapshot (Spawn, SpawnContext, SpawnException, SpawnFunction, Join, ClusterEnvironment
 * from {@code org.ddp4j.distributed}) still compiles, with deprecation warnings only.
 */
class OldImportsTest {
    @TempDir
    Path dir;

    @Test
    void anAppWithTheOldImportsStillCompiles() throws IOException {
        Path source = dir.resolve("OldImportsApp.java");
        Files.copy(RepoFiles.path("java/src/test/resources/old-imports/OldImportsApp.java.txt"), source);
        java.io.ByteArrayOutputStream errors = new java.io.ByteArrayOutputStream();
        int rc = ToolProvider.getSystemJavaCompiler().run(null, null, errors, "-proc:none", "-Xlint:deprecation",
                "-d", dir.toString(), "-cp", System.getProperty("java.class.path"), source.toString());
        String text = errors.toString();
        assertEquals(0, rc, text);
        assertTrue(text.contains("has been deprecated"), "the old imports are marked deprecated: " + text);
        assertTrue(Files.exists(dir.resolve("OldImportsApp.class")));
    }
}
