package org.ddp4j.benchmarks.collective;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The runner's batch sizes (the same on every rank) and its joining of JMH's per-size JSON arrays. */
class CollectiveBenchTest {

    @Test
    void batchesShrinkWithTheMessageAndStayWithinOneToAThousand() {
        assertEquals(300, CollectiveBench.callsPerIteration(0, 30));
        assertEquals(299, CollectiveBench.callsPerIteration(8, 30));
        assertEquals(26, CollectiveBench.callsPerIteration(1 << 20, 30)); // 30 ms over 1.149 ms
        assertEquals(1, CollectiveBench.callsPerIteration(128L << 20, 30));
        assertEquals(1000, CollectiveBench.callsPerIteration(8, 10_000));
    }

    @Test
    void jsonArraysOfEachSizeBecomeOneArray(@TempDir Path dir) throws Exception {
        Path out = dir.resolve("sub/all.json");
        CollectiveBench.writeJson(out, List.of("[\n  {\"a\": 1}\n]\n", "[]", "[\n  {\"b\": [2]}\n]"));
        assertEquals("[\n{\"a\": 1},\n{\"b\": [2]}\n]\n", Files.readString(out));
    }
}
