package org.ddp4j.distributed;

import org.ddp4j.testing.Ranks;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.ddp4j.distributed.store.TcpStore;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.testing.LauncherProcess;
import org.junit.jupiter.api.Test;

/** Initialising process groups again on the same store: each init gets its own key space (InitKeySpace). */
class RepeatedInitTest {
    private static final Duration TIMEOUT = Duration.ofSeconds(10);

    /** The environment the launcher gives rank {@code rank} when it hosts the store itself. */
    private static Map<String, String> launcherEnv(TcpStore agent, int rank) {
        return Map.of("MASTER_ADDR", "127.0.0.1", "MASTER_PORT", Integer.toString(agent.port()), "WORLD_SIZE", "2",
                "RANK", Integer.toString(rank), "DDP4J_AGENT_STORE", "1");
    }

    private static float sumOf(ProcessGroup group, float value) {
        try (Tensor t = Tensor.of(new float[] {value}, 1)) {
            group.allReduce(t, ReduceOp.SUM).await();
            return t.toFloatArray()[0];
        }
    }

    @Test
    void threeInitsOnOneLauncherStoreEachReduceCorrectly() throws Exception {
        try (TcpStore agent = TcpStore.server("127.0.0.1", 0, TIMEOUT)) {
            List<List<Float>> sums = Ranks.run(2, rank -> {
                List<Float> mine = new ArrayList<>();
                for (int init = 1; init <= 3; init++) {
                    try (ProcessGroup g = Distributed.createProcessGroup("gloo", "env://", -1, -1, TIMEOUT,
                            launcherEnv(agent, rank))) {
                        mine.add(sumOf(g, init * 10 + rank));
                    }
                }
                return mine;
            });
            List<Float> expected = List.of(21f, 41f, 61f);
            assertEquals(List.of(expected, expected), sums);
            // Init 1 keeps the root key space (as before); later inits have their own prefixes.
            assertTrue(agent.check(List.of("ddp4j/worker/0/ddp4j/joined/1", "ddp4j/worker/0/ddp4j/init/2/ddp4j/joined/1",
                    "ddp4j/worker/0/ddp4j/init/3/ddp4j/joined/0")));
            assertEquals(3, agent.add("ddp4j/worker/0/ddp4j/init/count/0", 0));
            assertEquals(3, agent.add("ddp4j/worker/0/ddp4j/init/count/1", 0));
        }
    }

    @Test
    void aPeerAheadOfThisRankFailsAtOnceNamingIt() throws Exception {
        try (TcpStore agent = TcpStore.server("127.0.0.1", 0, TIMEOUT)) {
            agent.add("ddp4j/worker/0/ddp4j/init/count/1", 2); // rank 1 has already initialised twice
            long t0 = System.nanoTime();
            var e = assertThrows(DistributedException.class, () -> Distributed.createProcessGroup("gloo", "env://", -1, -1,
                    TIMEOUT, launcherEnv(agent, 0)));
            assertTrue(System.nanoTime() - t0 < Duration.ofSeconds(5).toNanos(), "waited for the timeout");
            assertEquals("process group init #1 of rank 0: rank 1 (at init #2) is already past it; ranks must initialise"
                    + " process groups in lock-step (the same number of initProcessGroup calls on this store, in the"
                    + " same order)", e.getMessage());
        }
    }

    @Test
    void aPeerThatNeverArrivesTimesOutNamingIt() throws Exception {
        try (TcpStore agent = TcpStore.server("127.0.0.1", 0, TIMEOUT)) {
            var e = assertThrows(DistributedTimeoutException.class, () -> Distributed.createProcessGroup("gloo", "env://",
                    -1, -1, Duration.ofMillis(500), launcherEnv(agent, 0)));
            assertTrue(e.getMessage().startsWith("process group init #1 of rank 0: rank 1 (at init #0) did not reach it"
                    + " within 0.5 s"), e.getMessage());
        }
    }

    @Test
    void underTheLauncherANewJvmPerRankInitialisesAgain() throws Exception {
        LauncherProcess.Result r = LauncherProcess.run("--nproc-per-node", "2", "--master-port",
                Integer.toString(LauncherProcess.freePort()), "org.ddp4j.distributed.RepeatedInitMain");
        assertEquals(0, r.exitCode(), r.text());
        for (int rank = 0; rank < 2; rank++) {
            for (int init = 1; init <= 3; init++) {
                String expected = "reinit ok init=" + init + " rank=" + rank + " sum=" + 3 * (float) Math.pow(10, init - 1);
                assertTrue(r.lines().stream().anyMatch(l -> l.endsWith(expected)), "missing '" + expected + "' in\n"
                        + r.text());
            }
        }
    }
}
