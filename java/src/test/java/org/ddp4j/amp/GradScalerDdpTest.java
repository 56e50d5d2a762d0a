package org.ddp4j.amp;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.ddp4j.testing.RankProcesses;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * GradScaler on 2 ranks (separate JVMs) with an inf in rank 1's input at step 1: through DDP's
 * averaged gradient the inf reaches rank 0 too, so both skip that step even without the scaler's
 * own sync, and end with equal parameters; inside noSync() (no all-reduce) the scaler's found-inf
 * all-reduce makes both skip, and without it rank 0 would step (the control: the sync matters).
 */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class GradScalerDdpTest {
    private static List<String> run(String backward, String sync) throws Exception {
        return RankProcesses.run(GradScalerDdpMain.class, 2, Map.of(), Duration.ofSeconds(90), r -> 0, backward, sync);
    }

    private static String steps(String out, int rank) {
        StringBuilder s = new StringBuilder();
        out.lines().filter(l -> l.startsWith("step rank=" + rank + " ")).forEach(l -> s.append(l.substring(l.indexOf(" i="))).append('\n'));
        return s.toString();
    }

    private static final String SKIP_AT_1 = " i=0 stepped=true scale=65536.0\n i=1 stepped=false scale=32768.0\n"
            + " i=2 stepped=true scale=32768.0\n";

    @Test
    void anInfOnOneRankSkipsTheStepOnEveryRankThroughDdp() throws Exception {
        List<String> out = run("ddp", "nosync");
        assertEquals(SKIP_AT_1, steps(out.get(0), 0), out.get(0));
        assertEquals(SKIP_AT_1, steps(out.get(1), 1), out.get(1));
        String p0 = out.get(0).lines().filter(l -> l.startsWith("params rank=0 ")).findFirst().orElseThrow().substring(14);
        String p1 = out.get(1).lines().filter(l -> l.startsWith("params rank=1 ")).findFirst().orElseThrow().substring(14);
        assertEquals(p0, p1, "equal parameters on both ranks");
    }

    @Test
    void underNoSyncTheFoundInfAllReduceSkipsOnEveryRank() throws Exception {
        List<String> out = run("nosync", "sync");
        assertEquals(SKIP_AT_1, steps(out.get(0), 0), out.get(0));
        assertEquals(SKIP_AT_1, steps(out.get(1), 1), out.get(1));
        List<String> control = run("nosync", "nosync");
        assertEquals(" i=0 stepped=true scale=65536.0\n i=1 stepped=true scale=65536.0\n i=2 stepped=true scale=65536.0\n",
                steps(control.get(0), 0), "without the sync rank 0 would step: " + control.get(0));
        assertEquals(SKIP_AT_1, steps(control.get(1), 1), control.get(1));
    }
}
