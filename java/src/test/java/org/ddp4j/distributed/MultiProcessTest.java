package org.ddp4j.distributed;

import org.ddp4j.testing.RankProcesses;
import org.ddp4j.testing.Ranks;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Ranks as separate JVMs, rendezvous through env:// exactly as under the launcher. */
@Timeout(value = 180, unit = TimeUnit.SECONDS) // backstop above the 60 s wait per rank process
class MultiProcessTest {

    @Test
    void twoProcessesAllReduceThroughEnvInit() throws Exception {
        int world = 2;
        List<String> outputs = RankProcesses.run(CollectiveCheckMain.class, world, Map.of("DDP4J_TIMEOUT_SECONDS", "30"),
                Duration.ofSeconds(60), rank -> 0);
        for (int rank = 0; rank < world; rank++) {
            assertTrue(outputs.get(rank).contains("allreduce ok rank=" + rank + " sum=3"), outputs.get(rank));
        }
    }
}
