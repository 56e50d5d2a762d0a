package org.ddp4j.launch;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The launcher tells rank 0 alone to draw a progress bar, when its own stdout is a terminal or the user asks. */
class RankZeroProgressTest {

    @Test
    void autoFollowsTheTerminal() {
        assertTrue(RankZeroProgress.wanted(Map.of(), true));
        assertFalse(RankZeroProgress.wanted(Map.of(), false));
        assertTrue(RankZeroProgress.wanted(Map.of("DDP4J_PROGRESS", "auto"), true));
        assertFalse(RankZeroProgress.wanted(Map.of("DDP4J_PROGRESS", " AUTO "), false));
    }

    @Test
    void theUserForcesItOnOrOff() {
        assertTrue(RankZeroProgress.wanted(Map.of("DDP4J_PROGRESS", "1"), false));
        assertFalse(RankZeroProgress.wanted(Map.of("DDP4J_PROGRESS", "0"), true));
        assertTrue(RankZeroProgress.wanted(Map.of("DDP4J_PROGRESS", "on"), false));
        assertFalse(RankZeroProgress.wanted(Map.of("DDP4J_PROGRESS", "off"), true));
    }

    @Test
    void onlyRankZeroIsTold() {
        assertEquals("1", RankZeroProgress.forRank(0, true));
        assertEquals("0", RankZeroProgress.forRank(1, true));
        assertEquals("0", RankZeroProgress.forRank(0, false));
        assertEquals("0", RankZeroProgress.forRank(3, false));
    }

    @Test
    void aStreamOtherThanStdoutIsNoTerminal() {
        assertFalse(RankZeroProgress.isTerminal(new PrintStream(new ByteArrayOutputStream(), true, StandardCharsets.UTF_8)));
        assertFalse(RankZeroProgress.isTerminal(System.out), "surefire's stdout is a pipe, not a terminal");
    }

    @Test
    void aBadValueIsAUsageErrorNamingTheChoices() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> RankZeroProgress.wanted(Map.of("DDP4J_PROGRESS", "bar"), true));
        assertEquals("DDP4J_PROGRESS is 'bar': set it to 1 (a progress bar on rank 0 always), 0 (plain log lines) or auto"
                + " (a bar when the launcher's output is a terminal; the default), or unset it", e.getMessage());
        Map<String, String> env = LauncherTest.baseEnv();
        env.put("DDP4J_PROGRESS", "bar");
        LauncherTest.Run r = LauncherTest.launch(env, "--nproc-per-node", "1", "true");
        assertEquals(2, r.code(), r.err());
        assertTrue(r.err().contains("ddp4j-run: DDP4J_PROGRESS is 'bar': set it to 1"), r.err());
    }

    @Test
    void workersSeeTheVariableOnRankZeroOnly() throws Exception {
        Map<String, String> env = LauncherTest.baseEnv();
        env.put("DDP4J_PROGRESS", "1");
        LauncherTest.Run r = LauncherTest.launch(env, "--nproc-per-node", "2", "--master-port", Integer.toString(LauncherTest.freePort()),
                "sh", "-c", "echo progress=$DDP4J_PROGRESS");
        assertEquals(0, r.code(), r.err());
        assertTrue(r.outLines().contains("[rank0]: progress=1"), r.out());
        assertTrue(r.outLines().contains("[rank1]: progress=0"), r.out());
        env.remove("DDP4J_PROGRESS"); // auto, and the test's stream is no terminal
        r = LauncherTest.launch(env, "--nproc-per-node", "2", "--master-port", Integer.toString(LauncherTest.freePort()),
                "sh", "-c", "echo progress=$DDP4J_PROGRESS");
        assertEquals(0, r.code(), r.err());
        assertTrue(r.outLines().contains("[rank0]: progress=0"), r.out());
        assertTrue(r.outLines().contains("[rank1]: progress=0"), r.out());
    }
}
