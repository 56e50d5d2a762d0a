package org.ddp4j.distributed.checkpoint;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.ddp4j.distributed.fsdp.FSDPModule;
import org.ddp4j.distributed.fsdp.FullyShard;
import org.ddp4j.distributed.fsdp.FullyShardOptions;
import org.ddp4j.nn.Linear;
import org.ddp4j.nn.Module;
import org.ddp4j.nn.functional.Functional;
import org.ddp4j.nn.parallel.DistributedDataParallel;
import org.ddp4j.optim.AdamW;
import org.ddp4j.optim.Optimizer;
import org.ddp4j.serialization.Checkpoint;
import org.ddp4j.tensor.Generator;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;
import org.ddp4j.testing.Assertions2;
import org.ddp4j.testing.ParameterValues;
import org.ddp4j.testing.Ranks;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * ShardedCheckpoint with fully_shard: saved at 3 ranks (fc2's 2 rows leave rank 2 without any, and
 * the 0-dim scale has one row, on rank 0),
 * loaded at 2 into a model sharded differently: the parameters equal the consolidated file's to
 * the bit, and training goes on as DDP + AdamW restored from that file (1e-6).
 */
class FullyShardCheckpointTest {
    private static final Duration TIMEOUT = Duration.ofSeconds(60);

    @TempDir
    Path dir;

    static final class Net extends Module {
        final Linear fc1;
        final Linear fc2;
        final Tensor scale;

        Net(long seed) {
            Generator g = new Generator(seed);
            fc1 = registerModule("fc1", new Linear(5, 12, true, g));
            fc2 = registerModule("fc2", new Linear(12, 2, true, g));
            scale = registerParameter("scale", Tensor.of(new float[] {1f + seed / 10f}));
        }

        @Override
        public Tensor forward(Tensor x) {
            return fc2.forward(Functional.relu(fc1.forward(x))).mul(scale);
        }
    }

    /** Weights decay, biases do not; the same order for the whole model and for its shards. */
    private static AdamW adamW(Map<String, Tensor> params) {
        List<Map<String, ?>> groups = List.of(Map.of("params", List.of(params.get("fc1.weight"), params.get("fc2.weight"))),
                Map.of("params", List.of(params.get("fc1.bias"), params.get("fc2.bias"), params.get("scale")),
                        "weight_decay", 0.0));
        return new AdamW(groups, AdamW.Options.defaults().lr(0.05).weightDecay(0.1));
    }

    private static FSDPModule shard(Net net, org.ddp4j.distributed.ProcessGroup group) {
        FullyShard.fullyShard(net.fc1, FullyShardOptions.defaults().processGroup(group));
        return FullyShard.fullyShard(net, FullyShardOptions.defaults().processGroup(group));
    }

    private static void train(Module model, Optimizer opt, int rank, int step) {
        try (var scope = Tensors.scope()) {
            opt.zeroGrad();
            Generator data = new Generator(100L * step + rank);
            Tensor x = Tensor.of(data.uniform(3 * 5, -1f, 1f), 3, 5);
            model.forward(x).pow(2).mean().backward();
            opt.step();
        }
    }

    @Test
    void savedAtThreeRanksLoadsAtTwoAndTrainsOnLikeTheConsolidatedFile() throws Exception {
        Path checkpoint = dir.resolve("ckpt");
        Ranks.withGroups(3, TIMEOUT, (rank, group) -> {
            FSDPModule fsdp = shard(new Net(1), group);
            try (fsdp; AdamW opt = adamW(fsdp.namedParameters())) {
                for (int step = 0; step < 3; step++) {
                    train(fsdp, opt, rank, step);
                }
                ShardedCheckpoint.save(checkpoint, fsdp, opt);
                return null;
            }
        });
        Path single = dir.resolve("single.safetensors");
        ShardedCheckpoint.consolidate(checkpoint, single);
        Ranks.withGroups(2, TIMEOUT, (rank, group) -> {
            Net fsdpNet = new Net(8);
            try (Net plainNet = new Net(7)) {
                Checkpoint c = Checkpoint.load(single);
                c.restore("model", plainNet);
                FSDPModule fsdp = shard(fsdpNet, group);
                try (fsdp; DistributedDataParallel plain = new DistributedDataParallel(plainNet, group,
                                DistributedDataParallel.DEFAULT_BUCKET_CAP_BYTES);
                        AdamW adam = adamW(plainNet.namedParameters());
                        AdamW shardedAdam = adamW(fsdp.namedParameters())) {
                    c.restore("optimizer", adam);
                    ShardedCheckpoint.load(checkpoint, fsdp, shardedAdam);
                    assertArrayEquals(ParameterValues.of(plainNet), ParameterValues.gathered(fsdp), "parameters as loaded");
                    for (int step = 3; step < 5; step++) {
                        train(plain, adam, rank, step);
                        train(fsdp, shardedAdam, rank, step);
                        Assertions2.assertClose(ParameterValues.of(plainNet), ParameterValues.gathered(fsdp), 1e-6, 1e-6,
                                "parameters after step " + step + " on rank " + rank);
                    }
                }
                return null;
            }
        });
    }

    @Test
    void aZeroLoaderRefusesAFullyShardCheckpointByName() throws Exception {
        Path checkpoint = dir.resolve("ckpt");
        Ranks.withGroups(2, TIMEOUT, (rank, group) -> {
            FSDPModule fsdp = shard(new Net(1), group);
            try (fsdp; AdamW opt = adamW(fsdp.namedParameters())) {
                ShardedCheckpoint.save(checkpoint, fsdp, opt);
                try (Net net = new Net(1);
                        org.ddp4j.distributed.optim.ZeroRedundancyOptimizer zero =
                                new org.ddp4j.distributed.optim.ZeroRedundancyOptimizer(List.of(Map.of("params", net.parameters())),
                                        g -> new AdamW(g, AdamW.Options.defaults()), group)) {
                    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                            () -> ShardedCheckpoint.load(checkpoint, net, zero, group));
                    assertTrue(e.getMessage().contains("fully_shard checkpoint"), e.getMessage());
                }
                return null;
            }
        });
    }
}
