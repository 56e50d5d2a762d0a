package org.ddp4j.distributed.store;

import static org.junit.jupiter.api.Assertions.*;
import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.ddp4j.distributed.DistributedException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class FileStoreTest extends StoreContract {
    @TempDir
    Path dir;

    private int files;

    @Override
    protected List<Store> openClients(Duration timeout) {
        Path file = dir.resolve("store" + (files++));
        List<Store> stores = new ArrayList<>();
        for (int i = 0; i < CLIENTS; i++) {
            stores.add(new FileStore(file, timeout));
        }
        return stores;
    }

    @Override
    protected String storeName() {
        return "FileStore " + dir;
    }

    @Test
    void fileIsDeletedWhenTheLastUserCloses() {
        Path file = dir.resolve("shared");
        FileStore a = new FileStore(file, SHORT);
        FileStore b = new FileStore(file, SHORT);
        a.set("k", b("v"));
        a.close();
        assertTrue(Files.exists(file), "file deleted while a user still has it open");
        assertEquals("v", s(b.get("k")));
        assertEquals(1, b.numKeys());
        b.close();
        assertFalse(Files.exists(file), "file left behind after the last user closed");
        DistributedException e = assertThrows(DistributedException.class, () -> b.get("k"));
        assertTrue(e.getMessage().contains("closed"), e.getMessage());
        // a new store on the same path starts empty
        try (FileStore c = new FileStore(file, SHORT)) {
            assertFalse(c.check(List.of("k")));
        }
    }

    @Test
    void missingDirectoryIsReported() {
        Path file = dir.resolve("no-such-dir").resolve("store");
        DistributedException e = assertThrows(DistributedException.class, () -> new FileStore(file, SHORT));
        assertTrue(e.getMessage().contains(file.toString()), e.getMessage());
    }

    /** Two processes add to one counter at the same time (1000 and 2000 times) through the file's OS lock. */
    @Test
    void separateProcessesShareTheFile() throws Exception {
        Path file = dir.resolve("xproc");
        try (FileStore mine = new FileStore(file, LONG)) {
            String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
            Process child = new ProcessBuilder(java, "-cp", System.getProperty("java.class.path"),
                    FileStoreChild.class.getName(), file.toString())
                    .redirectErrorStream(true)
                    .redirectOutput(dir.resolve("child.log").toFile())
                    .start();
            try {
                mine.get("child-ready"); // the child is up
                mine.set("go", b("1"));
                mine.get("counter"); // the child has started adding: now add at the same time
                for (int i = 0; i < 1000; i++) {
                    mine.add("counter", 1);
                }
                assertTrue(child.waitFor(20, TimeUnit.SECONDS), "child process did not finish");
                assertEquals(0, child.exitValue(), () -> "child failed: " + read(dir.resolve("child.log").toFile()));
                assertEquals(3000, mine.add("counter", 0));
                assertEquals("from child", s(mine.get("child-key")));
                assertTrue(Files.exists(file), "the child's close must not delete a file still in use");
            } finally {
                child.destroyForcibly();
            }
        }
        assertFalse(Files.exists(file), "file left behind after both processes closed");
    }

    private static String read(File f) {
        try {
            return Files.readString(f.toPath());
        } catch (Exception e) {
            return e.toString();
        }
    }
}
