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
 * One rank of a 3- or 4-rank DDP job over plain Gloo (DDP4J_SHM=0, as ranks on different hosts) is killed with
 * SIGKILL in its backward, the first, a middle or the last rank: every survivor's error names the rank that died
 * and its pid, also a survivor that is not connected to it in the ring and learns of the failure only because
 * another survivor closed its connections, and none suggests {@code ddp.join()}. The store is hosted outside the
 * ranks, as the launcher hosts it ({@code DDP4J_AGENT_STORE=1}): where rank 0 hosts it, rank 0's death takes the
 * records with it and the survivors name the peer whose connection closed.
 */
@Timeout(value = 200, unit = TimeUnit.SECONDS)
class PeerKilledAmongManyTest {
    /**
     * {@code ring}: the gradients go through Gloo's ring (the small all-reduce off), where a rank is connected only
     * to its neighbours; otherwise through the small all-reduce, where every rank is connected to every other.
     */
    @ParameterizedTest(name = "{0} ranks, rank {1} killed, ring {2}")
    @CsvSource({"3, 0, true", "3, 1, true", "3, 2, true", "4, 0, true", "4, 2, true", "4, 3, true", "3, 1, false",
            "4, 0, false", "4, 2, false"})
    void everySurvivorNamesTheDeadRank(int world, int victim, boolean ring) throws Exception {
        List<String> outputs;
        try (TcpStore launchers = TcpStore.server("127.0.0.1", 0, Duration.ofSeconds(60))) {
            outputs = RankProcesses.run(PeerKilledMain.class, world,
                    Map.of("DDP4J_TIMEOUT_SECONDS", "60", "DDP4J_SHM", "0", "DDP4J_GLOO_SMALL_ALLREDUCE_BYTES",
                            ring ? "0" : Long.toString(256 << 10), "DDP4J_AGENT_STORE", "1", "MASTER_PORT",
                            Integer.toString(launchers.port())), Duration.ofSeconds(150),
                    rank -> rank == victim ? 128 + 9 : 3, Integer.toString(victim));
        }
        String pid = PeerKilledOutput.pid(outputs.get(victim), victim);
        List<String> survivors = new ArrayList<>();
        for (int rank = 0; rank < world; rank++) {
            if (rank != victim) {
                survivors.add(PeerKilledOutput.line(outputs.get(rank), "failed rank=" + rank + ": "));
            }
        }
        survivors.forEach(failed -> System.out.println(world + " ranks, rank " + victim + " killed, ring " + ring + ": "
                + failed));
        for (String failed : survivors) {
            PeerKilledOutput.assertNamesTheDeadRank(failed, victim, pid);
        }
    }
}
