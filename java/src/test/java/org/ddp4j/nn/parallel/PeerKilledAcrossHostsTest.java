package org.ddp4j.nn.parallel;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.ddp4j.distributed.store.TcpStore;
import org.ddp4j.testing.RankProcesses;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * One rank of a 4-rank DDP job on two pretend hosts of two ranks each (DDP4J_SHM_HOST_ID per rank: the
 * hierarchical path, shared memory inside a host and Gloo between the hosts' leaders) is killed with SIGKILL in
 * its backward: every survivor names the rank that died and its pid, on its own host (through shared memory) and
 * on the other host, whose leader sees only the dead rank's leader close its connections and reads the record
 * that leader left in the store (native/src/comm/gloo/peer_loss.h), and none suggests {@code ddp.join()}. The
 * store is hosted outside the ranks, as the launcher hosts it, so that rank 0 can be the victim.
 */
@Timeout(value = 200, unit = TimeUnit.SECONDS)
class PeerKilledAcrossHostsTest {
    private static final int WORLD = 4;

    /**
     * Hosts: ranks 0 and 1 on "host-a" (leader 0), ranks 2 and 3 on "host-b" (leader 2). {@code checks}: the
     * ranks compare their calls over Gloo before the data moves (DDP4J_GLOO_CHECK_COLLECTIVES=1, the default), where
     * every rank sees the victim's connection close; without, the victim's host sees the death in shared memory
     * and the other host learns of it only through the leaders' Gloo step.
     */
    @ParameterizedTest(name = "rank {0} killed, checks {1}")
    @CsvSource({"3, false", "2, false", "1, false", "0, false", "3, true"})
    void everySurvivorOnBothHostsNamesTheDeadRank(int victim, boolean checks) throws Exception {
        List<String> outputs;
        try (TcpStore launchers = TcpStore.server("127.0.0.1", 0, Duration.ofSeconds(60))) {
            outputs = RankProcesses.run(PeerKilledMain.class, WORLD,
                    rank -> Map.of("DDP4J_TIMEOUT_SECONDS", "60", "DDP4J_SHM", "1", "DDP4J_GLOO_CHECK_COLLECTIVES",
                            checks ? "1" : "0", "DDP4J_SHM_HOST_ID", rank < 2 ? "host-a" : "host-b",
                            "DDP4J_AGENT_STORE", "1", "MASTER_PORT", Integer.toString(launchers.port())),
                    Duration.ofSeconds(150), rank -> rank == victim ? 128 + 9 : 3, Integer.toString(victim));
        }
        String pid = PeerKilledOutput.pid(outputs.get(victim), victim);
        List<String> survivors = new ArrayList<>();
        for (int rank = 0; rank < WORLD; rank++) {
            if (rank != victim) {
                survivors.add(PeerKilledOutput.line(outputs.get(rank), "failed rank=" + rank + ": "));
            }
        }
        survivors.forEach(failed -> System.out.println(
                "2 hosts x 2, rank " + victim + " killed, checks " + checks + ": " + failed));
        for (String failed : survivors) {
            PeerKilledOutput.assertNamesTheDeadRank(failed, victim, pid);
        }
    }
}
