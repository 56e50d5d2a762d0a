package org.ddp4j.launch;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.TimeUnit;
import org.ddp4j.testing.LauncherProcess;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** A launcher flag after the main class goes to the workers; the launcher says so (on stderr), and still runs. */
@Timeout(value = 300, unit = TimeUnit.SECONDS) // backstop above LauncherProcess's 240 s bound
class LauncherFlagOrderTest {
    @Test
    void aLauncherFlagAfterTheCommandIsNamedInAWarning() throws Exception {
        LauncherProcess.Result r = LauncherProcess.run("--master-port", Integer.toString(LauncherProcess.freePort()),
                "true", "--nproc-per-node", "2", "--help");
        assertEquals(0, r.exitCode(), r.text());
        assertTrue(r.text().contains("ddp4j-run: warning: --nproc-per-node comes after true, so it goes to the workers"),
                r.text());
        assertFalse(r.text().contains("warning: --help"), "--help after the command is the workers' own: " + r.text());
    }
}
