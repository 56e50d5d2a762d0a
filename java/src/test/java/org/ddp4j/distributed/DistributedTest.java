package org.ddp4j.distributed;

import org.ddp4j.testing.Ranks;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.ddp4j.distributed.store.TcpStore;
import org.ddp4j.tensor.Tensor;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** Init methods, backends and the default-group API. */
@Timeout(value = 120, unit = TimeUnit.SECONDS) // backstop above Ranks.HANG_LIMIT, which names a hung rank first
class DistributedTest {
    private static final Duration TIMEOUT = Duration.ofSeconds(10);

    static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        }
    }

    /** Every rank sums [rank + 1] and returns what it got. */
    private static float sumOfRanks(ProcessGroup group) {
        try (Tensor t = Tensor.of(new float[] {group.rank() + 1}, 1)) {
            group.allReduce(t, ReduceOp.SUM).await();
            return t.toFloatArray()[0];
        }
    }

    @Test
    void envInitNamesEveryMissingVariable() {
        var e = assertThrows(IllegalStateException.class,
                () -> Distributed.createProcessGroup("gloo", "env://", -1, -1, TIMEOUT, Map.of()));
        for (String name : List.of("MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK")) {
            assertTrue(e.getMessage().contains(name), e.getMessage());
        }
        assertTrue(e.getMessage().contains("scripts/ddp4j-run"), e.getMessage());
        assertTrue(e.getMessage().contains("java -cp \"app.jar:libs/*\" org.ddp4j.launch.Launcher"), e.getMessage());
        assertTrue(e.getMessage().contains("ddp4j-VERSION-launcher.jar"), e.getMessage());

        var partial = assertThrows(IllegalStateException.class, () -> Distributed.createProcessGroup("gloo", null, -1, -1,
                TIMEOUT, Map.of("MASTER_ADDR", "127.0.0.1", "WORLD_SIZE", "2")));
        assertTrue(partial.getMessage().contains("but MASTER_PORT, RANK are not set"), partial.getMessage());

        // worldSize and rank given as arguments are not needed from the environment.
        var port = assertThrows(IllegalStateException.class, () -> Distributed.createProcessGroup("gloo", "env://", 2, 0,
                TIMEOUT, Map.of("MASTER_ADDR", "127.0.0.1")));
        assertTrue(port.getMessage().contains("but MASTER_PORT is not set"), port.getMessage());

        var bad = assertThrows(IllegalStateException.class, () -> Distributed.createProcessGroup("gloo", "env://", -1, -1,
                TIMEOUT, Map.of("MASTER_ADDR", "h", "MASTER_PORT", "x", "WORLD_SIZE", "2", "RANK", "0")));
        assertTrue(bad.getMessage().contains("MASTER_PORT=\"x\""), bad.getMessage());
    }

    @Test
    void backendsAndInitMethodsAreChecked() {
        var nccl = assertThrows(IllegalStateException.class,
                () -> Distributed.createProcessGroup("nccl", "env://", 1, 0, TIMEOUT, Map.of()));
        // Without a GPU: "no CUDA device" before any rendezvous; with one: the missing env:// variables.
        assertTrue(nccl.getMessage().contains(org.ddp4j.cuda.Cuda.isAvailable() ? "MASTER_ADDR" : "no CUDA device"),
                nccl.getMessage());
        var unknown = assertThrows(IllegalArgumentException.class,
                () -> Distributed.createProcessGroup("mpi", "env://", 1, 0, TIMEOUT, Map.of()));
        assertTrue(unknown.getMessage().contains("gloo") && unknown.getMessage().contains("nccl"), unknown.getMessage());
        var swapped = assertThrows(IllegalArgumentException.class,
                () -> Distributed.createProcessGroup("env://", "env://", 1, 0, TIMEOUT, Map.of()));
        assertTrue(swapped.getMessage().contains("initProcessGroup(\"gloo\", \"env://\""), swapped.getMessage());
        var scheme = assertThrows(IllegalArgumentException.class,
                () -> Distributed.createProcessGroup("gloo", "udp://x:1", 1, 0, TIMEOUT, Map.of()));
        assertTrue(scheme.getMessage().contains("tcp://host:port"), scheme.getMessage());
        var noRank = assertThrows(IllegalArgumentException.class,
                () -> Distributed.createProcessGroup("gloo", "tcp://127.0.0.1:1234", 2, -1, TIMEOUT, Map.of()));
        assertTrue(noRank.getMessage().contains("rank"), noRank.getMessage());
        assertThrows(IllegalArgumentException.class,
                () -> Distributed.createProcessGroup("gloo", "tcp://127.0.0.1:1234", 2, 2, TIMEOUT, Map.of()));
    }

    @Test
    void timeoutDefaultsAndOverride() {
        assertEquals(Duration.ofMinutes(30), World.defaultTimeout(Map.of()));
        assertEquals(Duration.ofMillis(1500), World.defaultTimeout(Map.of("DDP4J_TIMEOUT_SECONDS", "1.5")));
        assertThrows(IllegalStateException.class, () -> World.defaultTimeout(Map.of("DDP4J_TIMEOUT_SECONDS", "-3")));
    }

    @Test
    void tcpInitWithTwoRanks() throws Exception {
        String url = "tcp://127.0.0.1:" + freePort();
        List<Float> sums = Ranks.run(2, rank -> {
            try (ProcessGroup g = Distributed.createProcessGroup("gloo", url, 2, rank, TIMEOUT, Map.of())) {
                assertEquals("127.0.0.1", ((ProcessGroupGloo) g).hostname(), "a loopback master means a loopback bind");
                return sumOfRanks(g);
            }
        });
        assertEquals(List.of(3f, 3f), sums);
    }

    @Test
    void envInitWithThreeRanksReadsTheVariables() throws Exception {
        int port = freePort();
        List<Float> sums = Ranks.run(3, rank -> {
            Map<String, String> env = Map.of("MASTER_ADDR", "127.0.0.1", "MASTER_PORT", Integer.toString(port),
                    "WORLD_SIZE", "3", "RANK", Integer.toString(rank));
            try (ProcessGroup g = Distributed.createProcessGroup("gloo", "env://", -1, -1, TIMEOUT, env)) {
                assertEquals(rank, g.rank());
                return sumOfRanks(g);
            }
        });
        assertEquals(List.of(6f, 6f, 6f), sums);
    }

    @Test
    void launcherStoreIsSharedUnderTheRestartPrefix() throws Exception {
        try (TcpStore agent = TcpStore.server("127.0.0.1", 0, TIMEOUT)) {
            List<Float> sums = Ranks.run(2, rank -> {
                Map<String, String> env = Map.of("MASTER_ADDR", "127.0.0.1", "MASTER_PORT", Integer.toString(agent.port()),
                        "WORLD_SIZE", "2", "RANK", Integer.toString(rank), "DDP4J_AGENT_STORE", "1",
                        "DDP4J_RESTART_COUNT", "3");
                try (ProcessGroup g = Distributed.createProcessGroup("gloo", "env://", -1, -1, TIMEOUT, env)) {
                    return sumOfRanks(g);
                }
            });
            assertEquals(List.of(3f, 3f), sums);
            assertTrue(agent.check(List.of("ddp4j/worker/3/ddp4j/joined/0", "ddp4j/worker/3/ddp4j/joined/1")));
        }
    }

    @Test
    void fileInit(@TempDir Path dir) throws Exception {
        String url = "file://" + dir.resolve("rendezvous").toAbsolutePath();
        List<Float> sums = Ranks.run(2, rank -> {
            try (ProcessGroup g = Distributed.createProcessGroup("gloo", url, 2, rank, TIMEOUT, Map.of())) {
                return sumOfRanks(g);
            }
        });
        assertEquals(List.of(3f, 3f), sums);
    }

    @Test
    void aPortInUseIsReportedByTheStore() throws Exception {
        try (ServerSocket taken = new ServerSocket(0, 1, InetAddress.getByName("127.0.0.1"))) {
            var e = assertThrows(DistributedException.class, () -> Distributed.createProcessGroup("gloo",
                    "tcp://127.0.0.1:" + taken.getLocalPort(), 2, 0, TIMEOUT, Map.of()));
            assertTrue(e.getMessage().contains("in use"), e.getMessage());
        }
    }

    @Test
    void defaultGroupLifecycle() throws Exception {
        assertFalse(Distributed.isInitialized());
        var e = assertThrows(IllegalStateException.class, Distributed::getRank);
        assertTrue(e.getMessage().contains("initProcessGroup"), e.getMessage());
        for (int round = 0; round < 2; round++) { // re-initialising after destroy works
            ProcessGroup g = Distributed.initProcessGroup("gloo", "tcp://127.0.0.1:" + freePort(), 1, 0, TIMEOUT);
            try {
                assertTrue(Distributed.isInitialized());
                assertEquals(g, Distributed.defaultGroup());
                assertEquals(0, Distributed.getRank());
                assertEquals(1, Distributed.getWorldSize());
                assertEquals("gloo", Distributed.getBackend());
                assertThrows(IllegalStateException.class,
                        () -> Distributed.initProcessGroup("gloo", "tcp://127.0.0.1:1", 1, 0, TIMEOUT));
                Tensor t = Tensor.of(new float[] {2, 4}, 2);
                Distributed.allReduce(t, ReduceOp.SUM);
                Distributed.broadcast(t, 0);
                Tensor out = Tensor.zeros(2);
                Distributed.allGather(List.of(out), t);
                Distributed.barrier();
                assertArrayEquals(new float[] {2, 4}, out.toFloatArray(), 0f);
            } finally {
                Distributed.destroyProcessGroup();
            }
            assertFalse(Distributed.isInitialized());
        }
        Distributed.destroyProcessGroup(); // no group: nothing to do
    }
}
