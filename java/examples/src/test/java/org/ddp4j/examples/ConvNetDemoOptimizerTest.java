package org.ddp4j.examples;

import static org.ddp4j.examples.LearningBounds.LEARNED_ACCURACY;
import static org.ddp4j.examples.LearningBounds.LEARNED_LOSS;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.ddp4j.data.MnistDataset;
import org.ddp4j.testing.LauncherProcess;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * ConvNetDemo's --optimizer, --scheduler and --dropout: Adam with lr 0.001, a cosine
 * schedule and dropout learns on 2 ranks; a bad --dropout is refused before any rank starts.
 */
@Timeout(value = 300, unit = TimeUnit.SECONDS) // backstop above LauncherProcess's 240 s bound
class ConvNetDemoOptimizerTest {
    private static final Pattern LOSS = Pattern.compile("summary rank=\\d+ .* loss=([\\d.eE+-]+|NaN)");

    @Test
    void adamWithCosineScheduleAndDropoutLearns() throws Exception {
        assumeTrue(Files.isDirectory(MnistDataset.DEFAULT_DIR), "dataset-fashion-mnist is not installed");
        LauncherProcess.Result r = LauncherProcess.run("--nproc-per-node", "2", "--master-port",
                Integer.toString(LauncherProcess.freePort()), "org.ddp4j.examples.ConvNetDemo", "--limit", "2000",
                "--epochs", "2", "--device", "cpu", "--optimizer", "adam", "--lr", "0.001", "--scheduler", "cosine",
                "--dropout", "0.2", "--test-limit", "2000");
        assertEquals(0, r.exitCode(), "launcher failed:\n" + r.text());
        List<Matcher> losses = r.lines().stream().map(LOSS::matcher).filter(Matcher::find).toList();
        assertEquals(2, losses.size(), r.text());
        for (Matcher m : losses) {
            double loss = Double.parseDouble(m.group(1));
            assertTrue(loss < LEARNED_LOSS, "loss did not fall from ln(10): " + loss + "\n" + r.text());
        }
        Matcher acc = r.lines().stream().map(Pattern.compile("summary test_accuracy=([\\d.]+)")::matcher)
                .filter(Matcher::find).findFirst().orElseThrow();
        assertTrue(Double.parseDouble(acc.group(1)) > LEARNED_ACCURACY, acc.group(0));
    }

    @Test
    void aDropoutOutsideZeroToOneIsRefused() {
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        PrintStream original = System.err;
        int exit;
        System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
        try {
            // Checked first: no data is read and no process group is needed.
            exit = DemoCommandLine.execute(new ConvNetDemo(), new String[] {"--dropout", "1.0", "--device", "cpu"});
        } finally {
            System.setErr(original);
        }
        String text = err.toString(StandardCharsets.UTF_8);
        assertEquals(1, exit, text);
        assertTrue(text.contains("--dropout 1.0 is not a probability in [0, 1)"), text);
    }
}
