package org.ddp4j.examples;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import org.ddp4j.distributed.ProcessGroup;
import org.ddp4j.distributed.algorithms.ddpcommhooks.PowerSGD;
import org.ddp4j.distributed.algorithms.ddpcommhooks.PowerSGDState;
import org.ddp4j.nn.Linear;
import org.ddp4j.nn.MSELoss;
import org.ddp4j.nn.ReLU;
import org.ddp4j.nn.Sequential;
import org.ddp4j.nn.parallel.DistributedDataParallel;
import org.ddp4j.optim.SGD;
import org.ddp4j.serialization.Checkpoint;
import org.ddp4j.serialization.SafeTensors;
import org.ddp4j.tensor.Generator;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;
import org.ddp4j.testing.Ranks;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * PowerSGD's state goes through the checkpoint: 2 ranks (threads) train an MLP under PowerSGD
 * (compressing from iteration 3, error feedback and warm start), each saves its checkpoint after
 * step 5 with the hook's state, and goes on for 3 steps; a fresh model, optimizer and PowerSGD
 * state restored from those files and run for the same 3 steps must end with the same
 * parameters, bit for bit. Without the hook state (a fresh PowerSGDState: no error feedback, new
 * random Qs) the result differs, so the state is what makes the resume exact.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class CommHookCheckpointTest {
    private static final int SAVE_AFTER = 5;
    private static final int MORE = 3;

    private static Sequential model() {
        Generator g = new Generator(3);
        return new Sequential(new Linear(8, 16, true, g), new ReLU(), new Linear(16, 4, true, g));
    }

    private static void step(DistributedDataParallel ddp, SGD opt, int rank, int step) {
        try (var scope = Tensors.scope()) {
            opt.zeroGrad();
            Tensor x = Tensor.of(new Generator(100 + 10L * rank + step).normal(24), 3, 8);
            Tensor y = Tensor.of(new Generator(900 + 10L * rank + step).normal(12), 3, 4);
            new MSELoss().forward(ddp.forward(x), y).backward();
        }
        opt.step();
    }

    private static Map<String, float[]> params(Sequential m) {
        Map<String, float[]> out = new TreeMap<>();
        m.namedParameters().forEach((n, p) -> out.put(n, p.toFloatArray()));
        return out;
    }

    private record Run(Map<String, float[]> uninterrupted, Map<String, float[]> resumed, Map<String, float[]> fresh,
            long iterAfterRestore) {}

    private static PowerSGDState state(ProcessGroup g) {
        return new PowerSGDState(g, 1, 3, 0.5, true, true, 1e-8f, 0);
    }

    private static Run run(int rank, ProcessGroup g, Path dir) {
        Path file = dir.resolve("ckpt-rank" + rank + ".safetensors");
        Map<String, float[]> uninterrupted;
        Sequential a = model();
        try (DistributedDataParallel ddp = new DistributedDataParallel(a, g, 1 << 20); PowerSGDState s = state(g)) {
            ddp.registerCommHook(s, PowerSGD.POWER_SGD);
            SGD opt = new SGD(ddp.parameters(), 0.05, 0.9, 0, 0, false);
            for (int i = 0; i < SAVE_AFTER; i++) {
                step(ddp, opt, rank, i);
            }
            TrainingCheckpoint.save(file, new TrainingCheckpoint.Run(a, opt, null, new Generator(0), s), 1);
            for (int i = SAVE_AFTER; i < SAVE_AFTER + MORE; i++) {
                step(ddp, opt, rank, i);
            }
            uninterrupted = params(a);
        }
        Map<String, float[]> resumed;
        long iter;
        Sequential b = model();
        try (DistributedDataParallel ddp = new DistributedDataParallel(b, g, 1 << 20); PowerSGDState s = state(g)) {
            ddp.registerCommHook(s, PowerSGD.POWER_SGD);
            SGD opt = new SGD(ddp.parameters(), 0.05, 0.9, 0, 0, false);
            try (var scope = Tensors.scope()) {
                TrainingCheckpoint.restore(file, TrainingCheckpoint.read(file), new TrainingCheckpoint.Run(b, opt, null,
                        new Generator(0), (PowerSGDState) ddp.commHookState()));
            }
            iter = s.iter();
            for (int i = SAVE_AFTER; i < SAVE_AFTER + MORE; i++) {
                step(ddp, opt, rank, i);
            }
            resumed = params(b);
        }
        Map<String, float[]> fresh;
        Sequential c = model();
        try (DistributedDataParallel ddp = new DistributedDataParallel(c, g, 1 << 20);
                PowerSGDState s = new PowerSGDState(g, 1, 3, 0.5, true, true, 1e-8f, 0)) {
            ddp.registerCommHook(s, PowerSGD.POWER_SGD);
            SGD opt = new SGD(ddp.parameters(), 0.05, 0.9, 0, 0, false);
            try (var scope = Tensors.scope()) { // no hook state: PowerSGD starts over (plain all-reduce first)
                Checkpoint ck = TrainingCheckpoint.read(file);
                ck.restore(TrainingCheckpoint.MODEL, c);
                ck.restore(TrainingCheckpoint.OPTIMIZER, opt);
            }
            for (int i = SAVE_AFTER; i < SAVE_AFTER + MORE; i++) {
                step(ddp, opt, rank, i);
            }
            fresh = params(c);
        }
        return new Run(uninterrupted, resumed, fresh, iter);
    }

    @Test
    void aResumeWithTheHookStateEqualsTheUninterruptedRun(@TempDir Path dir) throws Exception {
        List<Run> runs = Ranks.withGroups(2, Duration.ofSeconds(60), (rank, g) -> run(rank, g, dir));
        for (int r = 0; r < 2; r++) {
            Run run = runs.get(r);
            assertEquals(SAVE_AFTER, run.iterAfterRestore(), "iterations restored");
            boolean freshDiffers = false;
            for (String name : run.uninterrupted().keySet()) {
                assertArrayEquals(run.uninterrupted().get(name), run.resumed().get(name), 0f, "rank " + r + " " + name);
                assertArrayEquals(runs.get(0).resumed().get(name), run.resumed().get(name), 0f, "ranks agree: " + name);
                freshDiffers |= !java.util.Arrays.equals(run.uninterrupted().get(name), run.fresh().get(name));
            }
            assertTrue(freshDiffers, "resuming without the hook state gave the same parameters: the test shows nothing");
        }
        // The hook's tensors are the checkpoint's comm_hook entry
        try (var scope = Tensors.scope()) {
            var keys = SafeTensors.loadFile(dir.resolve("ckpt-rank0.safetensors")).keySet();
            assertTrue(keys.contains("comm_hook/iter") && keys.contains("comm_hook/error.0")
                    && keys.contains("comm_hook/q_memory.0"), keys.toString());
        }
    }
}
