package org.ddp4j.examples;

import static org.ddp4j.examples.LearningBounds.LEARNED_LOSS;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.ddp4j.testing.LauncherProcess;
import org.ddp4j.text.ByteTokenizer;
import org.ddp4j.text.PrepareText;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * GPTDemo on 2 ranks over a small byte-level corpus: the ranks end with the same parameters, the
 * loss falls, and 3 steps saved with --stop-after then resumed equal 6 steps in one go, to the bit
 * with dropout (the schedule, AdamW's moments and the data windows come back; dropout's masks are a
 * function of the step and the rank). With {@code --shard zero1} (ZeroRedundancyOptimizer) the same
 * runs give the same bits; with {@code --shard full} (fully_shard) the same losses.
 */
@Timeout(value = 600, unit = TimeUnit.SECONDS) // backstop above LauncherProcess's 240 s bound per run
class GPTDemoTest {
    private static final Pattern SUMMARY = Pattern.compile("summary rank=(\\d) world=2 steps=(\\d+) seconds=\\S+ tokens_per_s=\\S+"
            + " loss=(\\S+) val_loss=(\\S+) mfu=\\S+ gemm_gflops=\\S+ peak_rss_mb=\\S+ parameters_crc32=(\\p{XDigit}{8})");

    @TempDir
    Path dir;

    @BeforeEach
    void corpus() throws Exception {
        StringBuilder text = new StringBuilder();
        for (int i = 0; i < 400; i++) {
            text.append("The quick brown fox ").append(i % 7 == 0 ? "jumps over" : "naps beside").append(" the lazy dog.\n");
        }
        Files.writeString(dir.resolve("corpus.txt"), text);
        PrepareText.prepare(dir.resolve("corpus.txt"), ByteTokenizer.get(), 0.1, 1, dir.resolve("data"));
    }

    private List<Matcher> demo(String... extra) throws Exception {
        List<String> args = new ArrayList<>(List.of("--nproc-per-node", "2", "--master-port",
                Integer.toString(LauncherProcess.freePort()), "org.ddp4j.examples.GPTDemo", "--data",
                dir.resolve("data").toString(), "--n-layer", "1", "--n-head", "2", "--n-embd", "32", "--block-size", "16",
                "--batch-size", "4", "--warmup-iters", "2", "--lr", "3e-3", "--eval-iters", "2", "--sample-tokens", "8"));
        args.addAll(List.of(extra));
        LauncherProcess.Result r = LauncherProcess.run(args.toArray(String[]::new));
        assertEquals(0, r.exitCode(), "launcher failed:\n" + r.text());
        // by rank: the two ranks' summary lines reach the launcher's output in either order
        List<Matcher> out = r.lines().stream().map(SUMMARY::matcher).filter(Matcher::find)
                .sorted(java.util.Comparator.comparing(m -> m.group(1))).toList();
        assertEquals(2, out.size(), r.text());
        assertEquals(out.get(0).group(5), out.get(1).group(5), "the ranks ended with different parameters\n" + r.text());
        assertTrue(r.text().contains("[rank0]: sample:"), r.text());
        return out;
    }

    @Test
    void twoRanksLearnAndAResumedRunEqualsAnUninterruptedOne() throws Exception {
        List<Matcher> straight = demo("--max-iters", "6", "--eval-interval", "3", "--dropout", "0.1");
        Path state = dir.resolve("state.safetensors");
        demo("--max-iters", "6", "--eval-interval", "3", "--dropout", "0.1", "--save", state.toString(), "--stop-after", "3");
        List<Matcher> resumed = demo("--max-iters", "6", "--eval-interval", "3", "--dropout", "0.1", "--resume",
                state.toString());
        assertEquals("3", resumed.get(0).group(2), "the resumed run trains the last 3 steps");
        for (int i = 0; i < 2; i++) {
            assertEquals(straight.get(i).group(5), resumed.get(i).group(5), "parameters after resuming");
            assertEquals(straight.get(i).group(3), resumed.get(i).group(3), "last loss after resuming");
            assertEquals(straight.get(i).group(4), resumed.get(i).group(4), "val loss after resuming");
        }
        // ZeRO stage 1 gives DDP + AdamW's bits, and its consolidated state resumes exactly.
        List<Matcher> zero = demo("--max-iters", "6", "--eval-interval", "3", "--dropout", "0.1", "--shard", "zero1");
        Path zeroState = dir.resolve("zero-state.safetensors");
        demo("--max-iters", "6", "--eval-interval", "3", "--dropout", "0.1", "--shard", "zero1", "--save",
                zeroState.toString(), "--stop-after", "3");
        List<Matcher> zeroResumed = demo("--max-iters", "6", "--eval-interval", "3", "--dropout", "0.1", "--shard",
                "zero1", "--resume", zeroState.toString());
        for (int i = 0; i < 2; i++) {
            for (List<Matcher> run : List.of(zero, zeroResumed)) {
                assertEquals(straight.get(i).group(5), run.get(i).group(5), "parameters under --shard zero1");
                assertEquals(straight.get(i).group(3), run.get(i).group(3), "last loss under --shard zero1");
            }
        }
        // fully_shard trains the same model: the same losses up to the order of float32 sums, and
        // both ranks end with the same (gathered) parameters.
        List<Matcher> full = demo("--max-iters", "6", "--eval-interval", "3", "--dropout", "0.1", "--shard", "full");
        assertEquals(full.get(0).group(5), full.get(1).group(5), "both ranks' parameters under --shard full");
        for (int i = 0; i < 2; i++) {
            for (int g : new int[] {3, 4}) {
                double expected = Double.parseDouble(straight.get(i).group(g));
                assertEquals(expected, Double.parseDouble(full.get(i).group(g)), 1e-4 * Math.abs(expected),
                        "loss under --shard full: " + full.get(i).group());
            }
        }
        List<Matcher> longer = demo("--max-iters", "150", "--eval-interval", "150");
        // bytes start at ln(256) = 5.5; on this corpus of one sentence 150 steps end near 0.75
        assertTrue(Double.parseDouble(longer.get(0).group(4)) < LEARNED_LOSS, longer.get(0).group());
    }
}
