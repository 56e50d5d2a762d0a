package org.ddp4j.distributed.checkpoint;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.ddp4j.distributed.optim.ZeroRedundancyOptimizer;
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
import org.ddp4j.testing.ParameterValues;
import org.ddp4j.testing.Ranks;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * ShardedCheckpoint with ZeroRedundancyOptimizer: saved at 3 ranks, loaded at 2, training goes on
 * with the bits of DDP + AdamW restored from the consolidated single file; a save that fails on one
 * rank fails on every rank and leaves the previous checkpoint loadable.
 */
class ShardedCheckpointTest {
    private static final Duration TIMEOUT = Duration.ofSeconds(60);

    @TempDir
    Path dir;

    static final class Net extends Module {
        final Linear fc1;
        final Linear fc2;

        Net(long seed) {
            Generator g = new Generator(seed);
            fc1 = registerModule("fc1", new Linear(5, 12, true, g));
            fc2 = registerModule("fc2", new Linear(12, 2, true, g));
        }

        @Override
        public Tensor forward(Tensor x) {
            return fc2.forward(Functional.relu(fc1.forward(x)));
        }
    }

    private static AdamW adamW(List<? extends Map<String, ?>> groups) {
        return new AdamW(groups, AdamW.Options.defaults().lr(0.05).weightDecay(0.1));
    }

    private static List<Map<String, ?>> groups(Net net) {
        return List.of(Map.of("params", List.of(net.fc1.weight(), net.fc2.weight())),
                Map.of("params", List.of(net.fc1.bias(), net.fc2.bias()), "weight_decay", 0.0));
    }

    private static void train(DistributedDataParallel model, Optimizer opt, int rank, int step) {
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
            try (Net net = new Net(1);
                    DistributedDataParallel model = new DistributedDataParallel(net, group,
                            DistributedDataParallel.DEFAULT_BUCKET_CAP_BYTES);
                    ZeroRedundancyOptimizer opt = new ZeroRedundancyOptimizer(groups(net), ShardedCheckpointTest::adamW,
                            group)) {
                for (int step = 0; step < 3; step++) {
                    train(model, opt, rank, step);
                }
                ShardedCheckpoint.save(checkpoint, net, opt, group);
                return null;
            }
        });
        Path single = dir.resolve("single.safetensors");
        ShardedCheckpoint.consolidate(checkpoint, single);
        try (Stream<Path> files = Files.list(checkpoint)) {
            assertEquals(2, files.count(), "metadata.json and one shard folder");
        }
        Ranks.withGroups(2, TIMEOUT, (rank, group) -> {
            try (Net plainNet = new Net(7); Net zeroNet = new Net(8)) {
                Checkpoint c = Checkpoint.load(single);
                c.restore("model", plainNet);
                try (DistributedDataParallel plain = new DistributedDataParallel(plainNet, group,
                                DistributedDataParallel.DEFAULT_BUCKET_CAP_BYTES);
                        AdamW adam = adamW(groups(plainNet));
                        ZeroRedundancyOptimizer zeroOpt = new ZeroRedundancyOptimizer(groups(zeroNet),
                                ShardedCheckpointTest::adamW, group)) {
                    c.restore("optimizer", adam);
                    ShardedCheckpoint.load(checkpoint, zeroNet, zeroOpt, group);
                    assertArrayEquals(ParameterValues.of(plainNet), ParameterValues.of(zeroNet), "parameters as loaded");
                    try (DistributedDataParallel zero = new DistributedDataParallel(zeroNet, group,
                            DistributedDataParallel.DEFAULT_BUCKET_CAP_BYTES)) {
                        for (int step = 3; step < 5; step++) {
                            train(plain, adam, rank, step);
                            train(zero, zeroOpt, rank, step);
                            assertArrayEquals(ParameterValues.of(plainNet), ParameterValues.of(zeroNet), "parameters after step " + step);
                        }
                    }
                }
                return null;
            }
        });
    }

    @Test
    void aSaveThatFailsOnOneRankFailsEverywhereAndKeepsThePreviousCheckpoint() throws Exception {
        Path checkpoint = dir.resolve("ckpt");
        List<float[]> saved = Ranks.withGroups(2, TIMEOUT, (rank, group) -> {
            try (Net net = new Net(1);
                    DistributedDataParallel model = new DistributedDataParallel(net, group,
                            DistributedDataParallel.DEFAULT_BUCKET_CAP_BYTES);
                    ZeroRedundancyOptimizer opt = new ZeroRedundancyOptimizer(groups(net), ShardedCheckpointTest::adamW,
                            group)) {
                train(model, opt, rank, 0);
                ShardedCheckpoint.save(checkpoint, net, opt, group);
                float[] atSave = ParameterValues.of(net);
                train(model, opt, rank, 1);
                if (rank == 1) { // a state tensor this rank would write is gone: its write fails
                    opt.localOptimizer().stateDict().state().values().iterator().next().get("exp_avg").close();
                }
                IllegalStateException e = assertThrows(IllegalStateException.class,
                        () -> ShardedCheckpoint.save(checkpoint, net, opt, group));
                assertTrue(e.getMessage().startsWith("ShardedCheckpoint.save to " + checkpoint + " failed on rank [1]"),
                        e.getMessage());
                assertTrue(e.getMessage().endsWith("the previous checkpoint in " + checkpoint + ", if any, is untouched"
                        + " and still loads"), e.getMessage());
                return atSave;
            }
        });
        try (Net net = new Net(9)) {
            Path single = dir.resolve("single.safetensors");
            ShardedCheckpoint.consolidate(checkpoint, single);
            Checkpoint.load(single).restore("model", net);
            assertArrayEquals(saved.get(0), ParameterValues.of(net), "the first save's parameters");
        }
    }
}
