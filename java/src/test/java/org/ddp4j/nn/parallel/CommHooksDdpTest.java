package org.ddp4j.nn.parallel;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import org.ddp4j.distributed.ProcessGroup;
import org.ddp4j.distributed.algorithms.ddpcommhooks.DefaultHooks;
import org.ddp4j.distributed.algorithms.ddpcommhooks.PowerSGD;
import org.ddp4j.distributed.algorithms.ddpcommhooks.PowerSGDState;
import org.ddp4j.nn.MSELoss;
import org.ddp4j.optim.SGD;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;
import org.ddp4j.testing.Ranks;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * DDP under every built-in communication hook, on 2 ranks (threads of this JVM, each with its own
 * group; shared memory and Gloo's TCP transport), with uneven inputs inside {@code join()} (rank 0
 * has 20 batches, rank 1 has 17) and the unused-parameter pattern of {@link UnevenTraining} (a
 * head no rank uses, one only rank 1 uses, one used every other step). Every rank must end with
 * the same parameters, and they must match the single-process reference (the mean of the ranks'
 * gradients, unused parameters skipped): to float32 rounding for the all-reduce hooks, within
 * 1e-2 for the fp16 and bf16 compression. PowerSGD (rank 1, from iteration 3, compression rate
 * 0.5 so that the small matrices qualify) is an approximation: the ranks must agree and the run
 * must differ from the reference once it compresses.
 */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class CommHooksDdpTest {
    private static final int[] BATCHES = {20, 17};

    private static void register(DistributedDataParallel ddp, ProcessGroup group, String hook) {
        switch (hook) {
            case "none" -> { }
            case "allreduce" -> ddp.registerCommHook(group, DefaultHooks.ALLREDUCE);
            // The same hook as a new lambda: takes the general hook path (flags in a message of their own).
            case "allreduce-general" -> ddp.registerCommHook(group, (g, b) -> DefaultHooks.allreduceHook(g, b));
            case "fp16" -> ddp.registerCommHook(group, DefaultHooks.FP16_COMPRESS);
            case "bf16" -> ddp.registerCommHook(group, DefaultHooks.BF16_COMPRESS);
            case "powersgd" -> ddp.registerCommHook(new PowerSGDState(group, 1, 3, 0.5, true, true, 1e-8f, 0),
                    PowerSGD.POWER_SGD);
            case "powersgd-rank2" -> ddp.registerCommHook(new PowerSGDState(group, 2, 3, 0.5, true, true, 1e-8f, 0),
                    PowerSGD.POWER_SGD);
            default -> throw new IllegalArgumentException(hook);
        }
    }

    private static Map<String, float[]> train(int rank, ProcessGroup group, String hook) {
        UnevenTraining.Heads model = new UnevenTraining.Heads();
        try (DistributedDataParallel ddp = new DistributedDataParallel(model, group,
                DistributedDataParallel.DEFAULT_BUCKET_CAP_BYTES)) {
            register(ddp, group, hook);
            SGD opt = UnevenTraining.optimizer(ddp.parameters());
            MSELoss loss = new MSELoss();
            try (var join = ddp.join()) {
                for (int step = 0; step < BATCHES[rank]; step++) {
                    model.use(rank, step, true);
                    try (var scope = Tensors.scope()) {
                        opt.zeroGrad();
                        loss.forward(ddp.forward(UnevenTraining.input(rank, step)), UnevenTraining.target(rank, step))
                                .backward();
                    }
                    opt.step();
                }
            }
            if (ddp.commHookState() instanceof PowerSGDState s) {
                assertTrue(s.iter() >= 17, "PowerSGD counted " + s.iter() + " iterations");
                long[] stats = s.compressionStats();
                assertTrue(stats[1] < stats[0], "PowerSGD compressed nothing: " + stats[0] + " -> " + stats[1]);
            }
            Map<String, float[]> out = new TreeMap<>();
            model.namedParameters().forEach((n, p) -> out.put(n, p.toFloatArray()));
            return out;
        }
    }

    @ParameterizedTest(name = "{0}, shm={1}")
    @CsvSource({"allreduce, true", "allreduce-general, false", "fp16, true", "bf16, false", "powersgd, true",
            "powersgd, false"})
    void everyRankEndsWithTheSameParametersUnderJoinAndUnusedParameters(String hook, boolean shm) throws Exception {
        List<Map<String, float[]>> results = shm
                ? Ranks.withGroups(2, Duration.ofSeconds(60), (rank, g) -> train(rank, g, hook))
                : Ranks.withGlooGroups(2, Duration.ofSeconds(60), (rank, g) -> train(rank, g, hook));
        Map<String, float[]> reference = UnevenTraining.reference(BATCHES, true);
        double tolerance = switch (hook) {
            case "fp16", "bf16" -> 1e-2;
            case "powersgd" -> Double.NaN;
            default -> 1e-5;
        };
        double farthest = 0;
        for (String name : reference.keySet()) {
            assertArrayEquals(results.get(0).get(name), results.get(1).get(name), 0f, name + ": ranks disagree");
            float[] ref = reference.get(name), got = results.get(0).get(name);
            for (int i = 0; i < ref.length; i++) {
                assertTrue(Float.isFinite(got[i]), name);
                farthest = Math.max(farthest, Math.abs(ref[i] - got[i]));
            }
        }
        if (Double.isNaN(tolerance)) {
            assertTrue(farthest > 1e-4, "PowerSGD gave exactly the uncompressed result (" + farthest + ")");
        } else {
            assertTrue(farthest <= tolerance, hook + ": " + farthest + " from the reference");
        }
    }

    /**
     * Ranks that registered different hooks fail at once, and each names both hooks rather than
     * blaming uneven inputs (the hooks' collectives differ in dtype or size, which a rank that ran
     * out of data never causes).
     */
    @ParameterizedTest(name = "{0} vs {1}, shm={2}")
    @CsvSource({"bf16, none, true", "fp16, bf16, false", "powersgd, powersgd-rank2, true"})
    void ranksWithDifferentHooksAreToldWhichHooks(String hook0, String hook1, boolean shm) throws Exception {
        Ranks.GroupBody<String> body = (rank, g) -> {
            UnevenTraining.Heads model = new UnevenTraining.Heads();
            try (DistributedDataParallel ddp = new DistributedDataParallel(model, g,
                    DistributedDataParallel.DEFAULT_BUCKET_CAP_BYTES)) {
                register(ddp, g, rank == 0 ? hook0 : hook1);
                MSELoss loss = new MSELoss();
                for (int step = 0; step < 6; step++) {
                    try (var scope = Tensors.scope()) {
                        loss.forward(ddp.forward(UnevenTraining.input(rank, step)), UnevenTraining.target(rank, step))
                                .backward();
                    }
                }
                return "no failure";
            } catch (org.ddp4j.distributed.DistributedException e) {
                return e.getMessage();
            }
        };
        List<String> messages = shm ? Ranks.withGroups(2, Duration.ofSeconds(60), body)
                : Ranks.withGlooGroups(2, Duration.ofSeconds(60), body);
        String name0 = hookName(hook0);
        String name1 = hookName(hook1);
        for (int rank = 0; rank < 2; rank++) {
            String m = messages.get(rank);
            assertTrue(m.contains("The ranks registered different communication hooks: rank " + rank + " uses "
                    + (rank == 0 ? name0 : name1) + ", rank " + (1 - rank) + " uses " + (rank == 0 ? name1 : name0)), m);
            assertTrue(!m.contains("ddp.join()"), m);
        }
    }

    private static String hookName(String hook) {
        return switch (hook) {
            case "none" -> "no communication hook (DDP's own all-reduce)";
            case "bf16" -> "bf16_compress_hook";
            case "fp16" -> "fp16_compress_hook";
            case "powersgd" -> "powerSGD_hook (matrix approximation rank 1, from iteration 3, error feedback on)";
            case "powersgd-rank2" -> "powerSGD_hook (matrix approximation rank 2, from iteration 3, error feedback on)";
            default -> throw new IllegalArgumentException(hook);
        };
    }

    @Test
    void aSecondRegistrationOrOneAfterBackwardIsRefused() throws Exception {
        Ranks.withGroups(2, Duration.ofSeconds(60), (rank, g) -> {
            UnevenTraining.Heads model = new UnevenTraining.Heads();
            try (DistributedDataParallel ddp = new DistributedDataParallel(model, g, 1 << 20);
                    DistributedDataParallel other = new DistributedDataParallel(new UnevenTraining.Heads(), g, 1 << 20)) {
                ddp.registerCommHook(g, DefaultHooks.BF16_COMPRESS);
                IllegalStateException twice = assertThrows(IllegalStateException.class,
                        () -> ddp.registerCommHook(g, DefaultHooks.FP16_COMPRESS));
                assertTrue(twice.getMessage().startsWith("registerCommHook can only be called once"), twice.getMessage());
                assertEquals(g, ddp.commHookState());
                try (var scope = Tensors.scope()) {
                    other.forward(UnevenTraining.input(rank, 0)).sum().backward();
                }
                IllegalStateException late = assertThrows(IllegalStateException.class,
                        () -> other.registerCommHook(g, DefaultHooks.FP16_COMPRESS));
                assertTrue(late.getMessage().contains("before the first backward"), late.getMessage());
                assertThrows(IllegalArgumentException.class, () -> new PowerSGDState(g, 1, 1, 2, true, true, 0f, 0));
            }
            return null;
        });
    }
}
