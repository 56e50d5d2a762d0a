package org.ddp4j.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.ddp4j.internal.MemoryPlan;
import org.ddp4j.models.gpt2.GPT2Config;
import org.ddp4j.models.gpt2.GPT2LMHeadModel;
import org.ddp4j.tensor.Generator;
import org.ddp4j.testing.LauncherProcess;
import org.ddp4j.text.ByteTokenizer;
import org.ddp4j.text.PrepareText;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The memory check in a real 2-rank job: with a budget between what ZeRO-1 and what DDP + AdamW
 * need, GPTDemo with AdamW is refused before its first step, naming the numbers and
 * ZeroRedundancyOptimizer, and the same job with {@code --shard zero1} trains; below what ZeRO-1 needs,
 * ZeRO is refused naming fully_shard, and {@code --shard full} trains.
 */
@Timeout(value = 300, unit = TimeUnit.SECONDS)
class MemoryPlanJobTest {
    @TempDir
    Path dir;

    @Test
    void adamWBeyondTheBudgetIsRefusedAndZeroOneFits() throws Exception {
        StringBuilder text = new StringBuilder();
        for (int i = 0; i < 200; i++) {
            text.append("A small corpus line number ").append(i).append(".\n");
        }
        Files.writeString(dir.resolve("corpus.txt"), text);
        PrepareText.prepare(dir.resolve("corpus.txt"), ByteTokenizer.get(), 0.1, 1, dir.resolve("data"));
        long params;
        try (GPT2LMHeadModel net = new GPT2LMHeadModel(new GPT2Config(ByteTokenizer.get().vocabSize(), 16, 64, 4, 2,
                256, 0, 0, 0, 1e-5, 0.02), new Generator(1))) {
            params = net.parameters().stream().mapToLong(p -> p.numel() * 4).sum();
        }
        // DDP + AdamW: runtime + 4 x params; ZeRO-1 on 2 ranks: runtime + about 3 x params.
        long budget = MemoryPlan.RUNTIME_BYTES + params * 7 / 2;
        Map<String, String> env = Map.of("DDP4J_MEMORY_PER_RANK", Long.toString(budget));
        List<String> args = List.of("--nproc-per-node", "2", "org.ddp4j.examples.GPTDemo", "--data",
                dir.resolve("data").toString(), "--n-layer", "4", "--n-head", "2", "--n-embd", "64", "--block-size", "16",
                "--batch-size", "2", "--max-iters", "2", "--warmup-iters", "1", "--eval-iters", "1", "--sample-tokens", "0");

        LauncherProcess.Result refused = LauncherProcess.finish(LauncherProcess.start(env, withPort(args)));
        assertNotEquals(0, refused.exitCode(), refused.text());
        assertTrue(refused.text().contains("AdamW needs at least ") && refused.text().contains("ZeroRedundancyOptimizer")
                && refused.text().contains("(DDP4J_MEMORY_PER_RANK=" + budget + ")"), refused.text());
        assertTrue(!refused.text().contains("iter 1:"), "the job trained before the check:\n" + refused.text());

        LauncherProcess.Result sharded = LauncherProcess.finish(LauncherProcess.start(env,
                withPort(concat(args, List.of("--shard", "zero1")))));
        assertEquals(0, sharded.exitCode(), sharded.text());
        assertTrue(sharded.text().contains("summary rank=0"), sharded.text());

        // Below ZeRO-1's 3 x params, fully_shard (shards, their gradients and AdamW's state over them:
        // about 2 x params, and the largest unit gathered) still fits.
        Map<String, String> tighter = Map.of("DDP4J_MEMORY_PER_RANK", Long.toString(MemoryPlan.RUNTIME_BYTES + params * 5 / 2));
        LauncherProcess.Result zeroRefused = LauncherProcess.finish(LauncherProcess.start(tighter,
                withPort(concat(args, List.of("--shard", "zero1")))));
        assertNotEquals(0, zeroRefused.exitCode(), zeroRefused.text());
        assertTrue(zeroRefused.text().contains("ZeroRedundancyOptimizer needs at least ")
                && zeroRefused.text().contains("fully_shard"), zeroRefused.text());
        LauncherProcess.Result full = LauncherProcess.finish(LauncherProcess.start(tighter,
                withPort(concat(args, List.of("--shard", "full")))));
        assertEquals(0, full.exitCode(), full.text());
        assertTrue(full.text().contains("summary rank=0"), full.text());
    }

    private static String[] withPort(List<String> args) throws Exception {
        return concat(List.of("--master-port", Integer.toString(LauncherProcess.freePort())), args).toArray(String[]::new);
    }

    private static List<String> concat(List<String> a, List<String> b) {
        return java.util.stream.Stream.concat(a.stream(), b.stream()).toList();
    }
}
