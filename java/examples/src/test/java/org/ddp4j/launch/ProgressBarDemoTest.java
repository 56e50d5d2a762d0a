package org.ddp4j.launch;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.file.Files;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.ddp4j.data.MnistDataset;
import org.ddp4j.multiprocessing.WorkerJvm;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * ConvNetDemo under the launcher: told to (DDP4J_PROGRESS=1, as on a terminal), rank 0 draws a bar
 * per epoch with '\r' redraws that reach the launcher's output prefixed, and the summary lines
 * still appear; not told, the output is the plain lines with no '\r'.
 */
@Timeout(value = 300, unit = TimeUnit.SECONDS)
class ProgressBarDemoTest {

    private static LauncherTest.Run demo(String progress) throws Exception {
        assumeTrue(Files.isDirectory(MnistDataset.DEFAULT_DIR), "dataset-fashion-mnist is not installed");
        Map<String, String> env = LauncherTest.baseEnv();
        env.put(WorkerJvm.JAVA_OPTS_ENV, "-Xshare:auto -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Xmx256m");
        if (progress != null) {
            env.put(RankZeroProgress.ENV, progress);
        }
        LauncherTest.Run r = LauncherTest.launch(env, "--nproc-per-node", "2", "--master-port",
                Integer.toString(LauncherTest.freePort()), "org.ddp4j.examples.ConvNetDemo", "--limit", "1200",
                "--batch-size", "5", "--epochs", "2", "--test-limit", "100", "--device", "cpu");
        assertEquals(0, r.code(), r.err());
        // 1200 images, 2 ranks, batch 5: 120 steps per epoch; the summary lines come as before
        List<String> lines = r.outLines();
        for (int rank = 0; rank < 2; rank++) {
            String p = "[rank" + rank + "]: summary rank=" + rank + " world=2 steps=240 ";
            assertTrue(lines.stream().anyMatch(l -> l.startsWith(p)), "no '" + p + "' line in:\n" + r.out());
        }
        assertTrue(lines.stream().anyMatch(l -> l.startsWith("[rank0]: summary test_accuracy=")), r.out());
        return r;
    }

    @Test
    void rankZeroDrawsABarWhenTold() throws Exception {
        LauncherTest.Run r = demo("1");
        String out = r.out();
        for (int epoch = 1; epoch <= 2; epoch++) {
            // the final drawing of each epoch's bar: its last segment, ended by the newline of close()
            String last = "[rank0]: Epoch " + epoch + "/2 100% [";
            assertTrue(out.contains(last), "no '" + last + "' in:\n" + out);
            assertTrue(out.matches("(?s).*\\Q" + last + "\\E[= ]*\\] 120/120 steps \\(\\d+:\\d\\d:\\d\\d / \\d+:\\d\\d:\\d\\d\\) loss +\\d+\\.\\d{4}\n.*"),
                    "the last bar of epoch " + epoch + " does not show 120/120 and the loss:\n" + out);
        }
        assertTrue(out.contains("\r"), "no '\\r' redraw in:\n" + out);
        assertTrue(out.lines().noneMatch(l -> l.startsWith("[rank1]: Epoch")), "rank 1 drew a bar:\n" + out);
        assertFalse(out.contains("Step [100/120]"), "the plain step lines were printed beside the bar:\n" + out);
        assertTrue(out.contains("[rank0]: Training complete in: "), out);
    }

    @Test
    void plainLinesOtherwise() throws Exception {
        for (String progress : new String[] {null, "0"}) {
            String out = demo(progress).out();
            assertFalse(out.contains("\r"), "a '\\r' with DDP4J_PROGRESS=" + progress + ":\n" + out);
            assertTrue(out.contains("[rank0]: Epoch [1/2], Step [100/120], Loss: "), out);
            assertTrue(out.contains("[rank0]: Epoch [2/2], Step [100/120], Loss: "), out);
            assertFalse(out.contains("100% ["), out);
        }
    }
}
