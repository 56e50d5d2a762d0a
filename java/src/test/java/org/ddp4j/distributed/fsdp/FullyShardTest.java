package org.ddp4j.distributed.fsdp;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.ddp4j.amp.Autocast;
import org.ddp4j.distributed.ProcessGroup;
import org.ddp4j.models.gpt2.GPT2Block;
import org.ddp4j.models.gpt2.GPT2Config;
import org.ddp4j.models.gpt2.GPT2LMHeadModel;
import org.ddp4j.nn.Module;
import org.ddp4j.nn.functional.Functional;
import org.ddp4j.nn.parallel.DistributedDataParallel;
import org.ddp4j.nn.utils.ClipGradNorm;
import org.ddp4j.optim.AdamW;
import org.ddp4j.optim.StepLR;
import org.ddp4j.tensor.DType;
import org.ddp4j.tensor.Device;
import org.ddp4j.tensor.Generator;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;
import org.ddp4j.testing.Assertions2;
import org.ddp4j.testing.Ranks;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * fully_shard against DistributedDataParallel on 2 and 3 ranks (threads, Gloo and shared memory):
 * a 2-block GPT-2, each block a unit and the root holding the tied embedding and head, trained 5
 * AdamW steps with nanoGPT's groups, gradient clipping and StepLR, ends every step with DDP's
 * parameters (1e-6); under a bf16 MixedPrecisionPolicy and autocast within 1e-2 relative. The
 * 16 positions and 32-wide biases do not split evenly over 3 ranks, so the padding is exercised.
 */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class FullyShardTest {
    private static final GPT2Config CONFIG = new GPT2Config(96, 16, 32, 2, 4, 128, 0, 0, 0, 1e-5, 0.02);
    private static final Duration TIMEOUT = Duration.ofSeconds(90);
    private static final int ROWS = 2;
    private static final int T = 12;
    private static final int STEPS = 5;

    /** Shards every block, then the root, as PyTorch's recipe for transformers. */
    static FSDPModule shard(GPT2LMHeadModel net, ProcessGroup group, FullyShardOptions options) {
        for (GPT2Block block : net.transformer().h()) {
            FullyShard.fullyShard(block, options.processGroup(group));
        }
        return FullyShard.fullyShard(net, options.processGroup(group));
    }

    /** nanoGPT's groups over any parameter list: decay on 2+ dimensions (shards keep their dimensions). */
    static List<Map<String, Object>> groups(List<Tensor> parameters) {
        List<Tensor> decay = new ArrayList<>();
        List<Tensor> noDecay = new ArrayList<>();
        for (Tensor p : parameters) {
            (p.dim() >= 2 ? decay : noDecay).add(p);
        }
        return List.of(Map.of("params", decay, "weight_decay", 0.1), Map.of("params", noDecay, "weight_decay", 0.0));
    }

    /** eps 1e-4 for the reason GPT2DdpTest gives (a bias gradient that is zero up to rounding). */
    static AdamW adamW(List<Tensor> parameters) {
        return new AdamW(groups(parameters), AdamW.Options.defaults().lr(1e-2).eps(1e-4));
    }

    /** This rank's tokens of step's batch: inputs [ROWS, T] and targets [ROWS * T]. */
    static Tensor[] batch(int rank, int step) {
        Generator g = new Generator(100L * step + rank);
        long[] x = new long[ROWS * T];
        long[] y = new long[ROWS * T];
        for (int r = 0; r < ROWS; r++) {
            long[] row = new long[T + 1];
            for (int i = 0; i <= T; i++) {
                row[i] = g.nextInt(CONFIG.vocabSize());
            }
            System.arraycopy(row, 0, x, r * T, T);
            System.arraycopy(row, 1, y, r * T, T);
        }
        return new Tensor[] {Tensor.ofLongs(x, ROWS, T), Tensor.ofLongs(y, ROWS * T)};
    }

    /** The loss of one micro-batch, backward run. */
    static void backward(Module model, int rank, int step, boolean autocast) {
        Tensor[] xy = batch(rank, step);
        Tensor loss;
        try (var ac = Autocast.enable(Device.CPU, DType.BFLOAT16, autocast)) {
            Tensor logits = model.forward(xy[0]);
            loss = Functional.crossEntropy(logits.view(-1, CONFIG.vocabSize()), xy[1], GPT2LMHeadModel.IGNORE_INDEX);
        }
        loss.backward();
    }

    static void step(Module model, AdamW opt, StepLR schedule, int rank, int step, boolean autocast) {
        try (var scope = Tensors.scope()) {
            opt.zeroGrad();
            backward(model, rank, step, autocast);
            ClipGradNorm.clipGradNorm(model.parameters(), 0.5);
            opt.step();
            schedule.step();
        }
    }

    /** The full parameters of the FSDP model, in the order of the bare model's parameters(). */
    static List<float[]> fullParameters(FSDPModule fsdp, GPT2LMHeadModel net) {
        Map<String, Tensor> full = fsdp.fullStateDict();
        List<float[]> out = new ArrayList<>();
        for (String name : net.namedParameters().keySet()) {
            out.add(full.get(name).toFloatArray());
        }
        full.values().forEach(Tensor::close);
        return out;
    }

    private static void compareWithDdp(int world, boolean bf16, double rtol, double atol) throws Exception {
        FullyShardOptions options = bf16
                ? FullyShardOptions.defaults().mpPolicy(new MixedPrecisionPolicy(DType.BFLOAT16, DType.FLOAT32))
                : FullyShardOptions.defaults();
        Ranks.withGroups(world, TIMEOUT, (rank, group) -> {
            // every rank starts from other weights: both wrappers take rank 0's
            try (GPT2LMHeadModel ddpNet = new GPT2LMHeadModel(CONFIG, new Generator(5 + rank));
                    GPT2LMHeadModel fsdpNet = new GPT2LMHeadModel(CONFIG, new Generator(5 + rank))) {
                DistributedDataParallel ddp = new DistributedDataParallel(ddpNet, group,
                        DistributedDataParallel.DEFAULT_BUCKET_CAP_BYTES);
                FSDPModule fsdp = shard(fsdpNet, group, options);
                assertEquals(ddp.parameters().size(), fsdp.parameters().size(), "the tied weight is one shard");
                AdamW ddpOpt = adamW(ddpNet.parameters());
                AdamW fsdpOpt = adamW(fsdp.parameters());
                StepLR ddpSchedule = new StepLR(ddpOpt, 2, 0.5);
                StepLR fsdpSchedule = new StepLR(fsdpOpt, 2, 0.5);
                for (int s = 0; s < STEPS; s++) {
                    step(ddp, ddpOpt, ddpSchedule, rank, s, bf16);
                    step(fsdp, fsdpOpt, fsdpSchedule, rank, s, bf16);
                    List<float[]> actual = fullParameters(fsdp, fsdpNet);
                    List<Tensor> expected = ddpNet.parameters();
                    for (int i = 0; i < expected.size(); i++) {
                        String what = "parameter " + i + " after step " + s + " on rank " + rank + " of " + world;
                        if (bf16) {
                            assertRelativeDistance(expected.get(i).toFloatArray(), actual.get(i), rtol, what);
                        } else {
                            Assertions2.assertClose(expected.get(i).toFloatArray(), actual.get(i), rtol, atol, what);
                        }
                    }
                }
                ddpOpt.close();
                fsdpOpt.close();
                ddp.close();
                fsdp.close();
                return null;
            }
        });
    }

    /**
     * ‖actual − expected‖ ≤ rtol · ‖expected‖. In bf16 an element whose gradient is near zero may
     * get Adam's full step either way (its sign is rounding), so bf16 runs are compared as tensors.
     */
    static void assertRelativeDistance(float[] expected, float[] actual, double rtol, String what) {
        double diff = 0;
        double norm = 0;
        for (int i = 0; i < expected.length; i++) {
            diff += (double) (actual[i] - expected[i]) * (actual[i] - expected[i]);
            norm += (double) expected[i] * expected[i];
        }
        double relative = Math.sqrt(diff / norm);
        assertTrue(relative <= rtol, what + ": relative distance " + relative + " > " + rtol);
    }

    @ParameterizedTest
    @ValueSource(ints = {2, 3})
    void trainsAsDistributedDataParallelInFloat32(int world) throws Exception {
        compareWithDdp(world, false, 1e-6, 1e-6);
    }

    @Test
    void bf16ParametersWithAutocastTrainAsDdpUnderAutocast() throws Exception {
        compareWithDdp(2, true, 1e-2, 0);
    }

    @ParameterizedTest
    @ValueSource(ints = {2, 3})
    void shardsPadAndGatherBackExactly(int world) throws Exception {
        Ranks.withGroups(world, TIMEOUT, (rank, group) -> {
            try (GPT2LMHeadModel net = new GPT2LMHeadModel(CONFIG, new Generator(5))) {
                Map<String, float[]> before = new java.util.LinkedHashMap<>();
                net.stateDict().forEach((name, t) -> before.put(name, t.toFloatArray()));
                FSDPModule fsdp = shard(net, group, FullyShardOptions.defaults());
                for (Map.Entry<String, Tensor> p : fsdp.namedParameters().entrySet()) {
                    long rows = net.stateDict().get(p.getKey()).size(0);
                    assertEquals((rows + world - 1) / world, p.getValue().size(0), "rows of the shard of " + p.getKey());
                }
                assertFalse(net.transformer().wpe().weight().hasStorage(), "a sharded unit holds no full parameter");
                Map<String, Tensor> full = fsdp.fullStateDict();
                assertEquals(before.keySet(), full.keySet());
                before.forEach((name, v) -> assertArrayEquals(v, full.get(name).toFloatArray(), name));
                full.values().forEach(Tensor::close);
                assertFalse(net.transformer().wpe().weight().hasStorage(), "fullStateDict frees what it gathered");
                fsdp.close();
                return null;
            }
        });
    }

    @Test
    void bf16ParametersAreGatheredRoundedToBf16() throws Exception {
        Ranks.withGroups(2, TIMEOUT, (rank, group) -> {
            try (GPT2LMHeadModel net = new GPT2LMHeadModel(CONFIG, new Generator(5))) {
                float[] master = net.transformer().wte().weight().toFloatArray();
                FSDPModule fsdp = shard(net, group,
                        FullyShardOptions.defaults().mpPolicy(new MixedPrecisionPolicy(DType.BFLOAT16, null)));
                fsdp.unshard();
                float[] gathered = net.transformer().wte().weight().toFloatArray();
                try (Tensor rounded = Tensor.of(master, master.length).to(DType.BFLOAT16).to(DType.FLOAT32)) {
                    assertArrayEquals(rounded.toFloatArray(), gathered, "the compute weights are the bf16 rounding");
                }
                fsdp.reshard();
                Map<String, Tensor> full = fsdp.fullStateDict();
                assertArrayEquals(master, full.get("transformer.wte.weight").toFloatArray(), "the float32 master is kept");
                full.values().forEach(Tensor::close);
                fsdp.close();
                return null;
            }
        });
    }

    @Test
    void accumulatesWithoutSyncAsDdpNoSync() throws Exception {
        Ranks.withGroups(2, TIMEOUT, (rank, group) -> {
            try (GPT2LMHeadModel ddpNet = new GPT2LMHeadModel(CONFIG, new Generator(5));
                    GPT2LMHeadModel fsdpNet = new GPT2LMHeadModel(CONFIG, new Generator(5))) {
                DistributedDataParallel ddp = new DistributedDataParallel(ddpNet, group,
                        DistributedDataParallel.DEFAULT_BUCKET_CAP_BYTES);
                FSDPModule fsdp = shard(fsdpNet, group, FullyShardOptions.defaults());
                AdamW ddpOpt = adamW(ddpNet.parameters());
                AdamW fsdpOpt = adamW(fsdp.parameters());
                for (int s = 0; s < 2; s++) {
                    try (var scope = Tensors.scope()) {
                        ddpOpt.zeroGrad();
                        fsdpOpt.zeroGrad();
                        try (var noSync = ddp.noSync()) {
                            backward(ddp, rank, 10 * s, false);
                        }
                        backward(ddp, rank, 10 * s + 1, false);
                        fsdp.setRequiresGradientSync(false);
                        backward(fsdp, rank, 10 * s, false);
                        if (s == 0) {
                            assertTrue(fsdp.parameters().stream().allMatch(p -> p.grad() == null),
                                    "no gradient reaches a shard without sync");
                        }
                        fsdp.setRequiresGradientSync(true);
                        backward(fsdp, rank, 10 * s + 1, false);
                        ddpOpt.step();
                        fsdpOpt.step();
                    }
                    List<float[]> actual = fullParameters(fsdp, fsdpNet);
                    List<Tensor> expected = ddpNet.parameters();
                    for (int i = 0; i < expected.size(); i++) {
                        Assertions2.assertClose(expected.get(i).toFloatArray(), actual.get(i), 1e-6, 1e-6,
                                "parameter " + i + " after accumulation step " + s + " on rank " + rank);
                    }
                }
                ddpOpt.close();
                fsdpOpt.close();
                ddp.close();
                fsdp.close();
                return null;
            }
        });
    }

    /** Four Linear layers, each to be a unit; records which layers hold storage after each layer's forward. */
    static final class Stack extends Module {
        final List<org.ddp4j.nn.Linear> layers = new ArrayList<>();
        final List<String> trace = new ArrayList<>();

        Stack() {
            Generator g = new Generator(2);
            for (int i = 0; i < 4; i++) {
                layers.add(registerModule("l" + i, new org.ddp4j.nn.Linear(8, 8, true, g)));
            }
        }

        String held() {
            StringBuilder b = new StringBuilder();
            for (org.ddp4j.nn.Linear l : layers) {
                b.append(l.weight().hasStorage() ? '1' : '0');
            }
            return b.toString();
        }

        @Override
        public Tensor forward(Tensor x) {
            for (org.ddp4j.nn.Linear l : layers) {
                x = Functional.relu(l.forward(x));
                trace.add(held());
            }
            return x;
        }
    }

    @ParameterizedTest
    @ValueSource(booleans = {true, false})
    void aUnitIsGatheredWhenReachedAndFreedAfter(boolean reshardAfterForward) throws Exception {
        Ranks.withGroups(2, TIMEOUT, (rank, group) -> {
            try (Stack net = new Stack()) {
                FullyShardOptions options = FullyShardOptions.defaults().processGroup(group)
                        .reshardAfterForward(reshardAfterForward);
                for (org.ddp4j.nn.Linear l : net.layers) {
                    FullyShard.fullyShard(l, options);
                }
                FSDPModule fsdp = FullyShard.fullyShard(net, options);
                assertEquals("0000", net.held(), "sharded: no layer holds its full weight");
                try (var scope = Tensors.scope()) {
                    Tensor loss = fsdp.forward(Tensor.ones(2, 8)).sum();
                    assertEquals(reshardAfterForward ? List.of("1000", "0100", "0010", "0001")
                            : List.of("1000", "1100", "1110", "1111"), net.trace, "held after each layer's forward");
                    assertEquals(reshardAfterForward ? "0000" : "1111", net.held(), "held after the forward");
                    loss.backward();
                    assertEquals("0000", net.held(), "held after the backward");
                    assertTrue(fsdp.parameters().stream().allMatch(p -> p.grad() != null), "every shard has its gradient");
                }
                fsdp.close();
                return null;
            }
        });
    }

    @Test
    void refusesToShardTwice() throws Exception {
        Ranks.withGroups(2, TIMEOUT, (rank, group) -> {
            try (GPT2LMHeadModel net = new GPT2LMHeadModel(CONFIG, new Generator(5))) {
                FSDPModule fsdp = shard(net, group, FullyShardOptions.defaults());
                IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                        () -> FullyShard.fullyShard(net, FullyShardOptions.defaults().processGroup(group)));
                assertTrue(e.getMessage().contains("sharded already"), e.getMessage());
                fsdp.close();
                return null;
            }
        });
    }
}
