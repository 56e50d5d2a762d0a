package org.ddp4j.launch;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.ddp4j.testing.LauncherProcess;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** Gloo collectives between separate worker processes started by the launcher (CollectiveCheckMain). */
@Timeout(value = 300, unit = TimeUnit.SECONDS) // backstop above LauncherProcess's 240 s bound
class LauncherCollectivesTest {

    private static void assertEveryRankSummed(List<String> lines, int world) {
        for (int rank = 0; rank < world; rank++) {
            String expected = "allreduce ok rank=" + rank + " sum=" + world * (world + 1) / 2;
            assertTrue(lines.stream().anyMatch(l -> l.endsWith(expected)), "missing '" + expected + "' in\n"
                    + String.join("\n", lines));
        }
    }

    @ParameterizedTest
    @ValueSource(ints = {2, 3, 4})
    void allReduceAcrossLaunchedProcesses(int world) throws Exception {
        LauncherProcess.Result r = LauncherProcess.run("--nproc-per-node", Integer.toString(world),
                "--master-port", Integer.toString(LauncherProcess.freePort()), "org.ddp4j.distributed.CollectiveCheckMain");
        assertEquals(0, r.exitCode(), r.text());
        assertEveryRankSummed(r.lines(), world);
    }

    @Test
    void allReduceAcrossTwoLaunchersWithUnevenProcessCounts() throws Exception {
        String port = Integer.toString(LauncherProcess.freePort());
        List<Process> nodes = new ArrayList<>();
        nodes.add(LauncherProcess.start("--nnodes", "2", "--node-rank", "0", "--nproc-per-node", "2",
                "--master-port", port, "org.ddp4j.distributed.CollectiveCheckMain"));
        nodes.add(LauncherProcess.start("--nnodes", "2", "--node-rank", "1", "--nproc-per-node", "1",
                "--master-port", port, "org.ddp4j.distributed.CollectiveCheckMain"));
        List<String> all = new ArrayList<>();
        try {
            for (Process p : nodes) {
                LauncherProcess.Result r = LauncherProcess.finish(p);
                assertEquals(0, r.exitCode(), r.text());
                all.addAll(r.lines());
            }
        } finally {
            nodes.forEach(LauncherProcess::kill); // node 1 must not outlive a failure of node 0
        }
        assertEveryRankSummed(all, 3);
    }
}
