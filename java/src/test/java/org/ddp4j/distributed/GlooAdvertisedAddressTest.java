package org.ddp4j.distributed;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.net.InetAddress;
import java.net.UnknownHostException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.ddp4j.distributed.store.HashStore;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.testing.Ranks;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Which address a Gloo rank advertises when MASTER_ADDR is a name that resolves to loopback on its host (Debian's
 * 127.0.1.1 line for the host's own name), with name resolution and routes injected: two hosts, node0 (10.77.0.1,
 * where /etc/hosts maps "node0" to 127.0.1.1) and node1 (10.77.0.2). Before, such a rank always advertised
 * 127.0.0.1, which ranks on node1 cannot reach. (A real two-host run would need per-namespace /etc/hosts files
 * under the namespace cluster; this tests the choice itself.)
 */
class GlooAdvertisedAddressTest {
    /** node0's view: "node0" is 127.0.1.1, node1 is 10.77.0.2 and routed from 10.77.0.1. */
    private static final GlooAdvertisedAddress.Network NODE0 = new FakeNetwork(
            Map.of("node0", "127.0.1.1", "node1", "10.77.0.2", "localhost", "127.0.0.1"),
            Map.of("10.77.0.2", "10.77.0.1", "10.77.0.1", "10.77.0.1"));

    /** node1's view: "node0" is 10.77.0.1, routed from 10.77.0.2. */
    private static final GlooAdvertisedAddress.Network NODE1 = new FakeNetwork(
            Map.of("node0", "10.77.0.1", "node1", "127.0.1.1"), Map.of("10.77.0.1", "10.77.0.2"));

    @Test
    void aRankWithPeersOnAnotherHostAdvertisesItsAddressOnTheRouteToThem() throws Exception {
        InetAddress resolved = GlooAdvertisedAddress.loopbackMaster("node0", NODE0);
        assertEquals("127.0.1.1", resolved.getHostAddress());
        // rank 1 is on node0 too (in the same case), ranks 2 and 3 on node1
        String address = GlooAdvertisedAddress.choose("node0", resolved, 0,
                Map.of(1, GlooAdvertisedAddress.UNDECIDED, 2, "10.77.0.2", 3, "node1"), NODE0);
        assertEquals("10.77.0.1", address);
    }

    /**
     * Through a store: rank 0 on node0 (where ProcessGroupGloo.defaultHostname gave 127.0.0.1, the old advertised
     * address) and rank 1 on node1 (which advertises its route to the master, 10.77.0.2) publish their addresses;
     * rank 0 then advertises 10.77.0.1. DDP4J_GLOO_HOSTNAME keeps what it says.
     */
    @Test
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void theRanksAgreeThroughTheStore() throws Exception {
        GlooOptions plain = GlooOptions.fromEnvironment(Map.of());
        try (HashStore store = new HashStore(Duration.ofSeconds(20))) {
            List<String> chosen = Ranks.run(2, rank -> GlooAdvertisedAddress.agree(store, rank, 2, "node0", plain,
                    rank == 0 ? "127.0.0.1" : "10.77.0.2", rank == 0 ? NODE0 : NODE1));
            assertEquals(List.of("10.77.0.1", "10.77.0.2"), chosen);
        }
        GlooOptions configured = GlooOptions.fromEnvironment(Map.of("DDP4J_GLOO_HOSTNAME", "127.0.0.1"));
        try (HashStore store = new HashStore(Duration.ofSeconds(20))) {
            assertEquals("127.0.0.1", GlooAdvertisedAddress.agree(store, 0, 2, "node0", configured, "127.0.0.1", NODE0),
                    "a configured address is not second-guessed (and does not wait for the peers)");
        }
    }

    @Test
    void whenEveryRankRunsHereLoopbackIsKept() throws Exception {
        InetAddress resolved = GlooAdvertisedAddress.loopbackMaster("node0", NODE0);
        assertEquals("127.0.0.1", GlooAdvertisedAddress.choose("node0", resolved, 0, Map.of(1, GlooAdvertisedAddress.UNDECIDED, 2, GlooAdvertisedAddress.UNDECIDED), NODE0));
        assertEquals("127.0.0.1", GlooAdvertisedAddress.choose("node0", resolved, 1,
                Map.of(0, "127.0.0.1", 2, "10.77.0.1"), NODE0), "a peer that advertises this host's own address");
    }

    @Test
    void noRouteToThePeersFailsNamingMasterAddrTheAddressAndTheFix() throws Exception {
        GlooAdvertisedAddress.Network isolated = new FakeNetwork(Map.of("node0", "127.0.1.1"), Map.of());
        InetAddress resolved = GlooAdvertisedAddress.loopbackMaster("node0", isolated);
        String message = assertThrows(DistributedException.class,
                () -> GlooAdvertisedAddress.choose("node0", resolved, 0, Map.of(1, "10.77.0.2"), isolated)).getMessage();
        assertTrue(message.startsWith("MASTER_ADDR=node0 resolves to the loopback address 127.0.1.1 on rank 0's host"),
                message);
        assertTrue(message.contains("rank 1 at 10.77.0.2 on another host cannot reach"), message);
        assertTrue(message.contains("set DDP4J_GLOO_HOSTNAME to this host's address"), message);
    }

    @Test
    void onlyAHostNameThatIsLoopbackHereNeedsTheChoice() {
        assertNull(GlooAdvertisedAddress.loopbackMaster("localhost", NODE0), "localhost means this host only");
        assertNull(GlooAdvertisedAddress.loopbackMaster("127.0.0.1", NODE0), "a literal is what it says");
        assertNull(GlooAdvertisedAddress.loopbackMaster("node1", NODE0), "a network address");
        assertNull(GlooAdvertisedAddress.loopbackMaster("nowhere", NODE0), "unresolvable: the store reports it");
        assertNull(GlooAdvertisedAddress.loopbackMaster(null, NODE0), "no master (file://, HashStore)");
    }

    /**
     * Through the store, on this machine: two ranks with MASTER_ADDR set to this host's name, where that name
     * resolves to loopback (Debian's /etc/hosts does; skipped elsewhere), agree that both run here and keep 127.0.0.1.
     */
    @Test
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void ranksOnOneHostWhoseNameIsLoopbackAgreeOnLoopback() throws Exception {
        String name = Files.readString(Path.of("/proc/sys/kernel/hostname")).trim();
        InetAddress here = GlooAdvertisedAddress.loopbackMaster(name, GlooAdvertisedAddress.SYSTEM);
        assumeTrue(here != null, "this host's name " + name + " does not resolve to a loopback address");
        int port = DistributedTest.freePort();
        List<String> results = Ranks.run(2, rank -> {
            Map<String, String> env = Map.of("MASTER_ADDR", name, "MASTER_PORT", Integer.toString(port),
                    "WORLD_SIZE", "2", "RANK", Integer.toString(rank));
            try (ProcessGroup g = Distributed.createProcessGroup("gloo", "env://", -1, -1, Duration.ofSeconds(20), env);
                    Tensor t = Tensor.of(new float[] {rank + 1}, 1)) {
                g.allReduce(t, ReduceOp.SUM).await();
                return ((ProcessGroupGloo) g).hostname() + " " + t.toFloatArray()[0];
            }
        });
        assertEquals(List.of("127.0.0.1 3.0", "127.0.0.1 3.0"), results);
    }

    /** Names and routes from two maps; a name not in the first does not resolve, an address not in the second has no route. */
    private record FakeNetwork(Map<String, String> names, Map<String, String> routes)
            implements GlooAdvertisedAddress.Network {
        @Override
        public InetAddress resolve(String host) throws UnknownHostException {
            String a = host.matches("[0-9.]+") ? host : names.get(host);
            if (a == null) {
                throw new UnknownHostException(host);
            }
            return InetAddress.getByName(a); // a literal: no lookup
        }

        @Override
        public InetAddress routeFrom(InetAddress remote) {
            String local = routes.get(remote.getHostAddress());
            try {
                return local == null ? null : InetAddress.getByName(local);
            } catch (UnknownHostException e) {
                throw new AssertionError(e);
            }
        }
    }
}
