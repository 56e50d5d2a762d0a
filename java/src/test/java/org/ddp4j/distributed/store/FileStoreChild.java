package org.ddp4j.distributed.store;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;

/** The other process of {@link FileStoreTest#separateProcessesShareTheFile}: adds 2000 to the shared counter. */
public final class FileStoreChild {
    private FileStoreChild() {}

    public static void main(String[] args) {
        try (FileStore store = new FileStore(Path.of(args[0]), Duration.ofSeconds(10))) {
            store.set("child-ready", "1".getBytes(StandardCharsets.UTF_8));
            store.get("go");
            for (int i = 0; i < 2000; i++) {
                store.add("counter", 1);
            }
            store.set("child-key", "from child".getBytes(StandardCharsets.UTF_8));
        }
    }
}
