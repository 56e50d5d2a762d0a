package org.ddp4j.distributed.fsdp;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import org.ddp4j.distributed.ProcessGroup;
import org.ddp4j.examples.ConvNet;
import org.ddp4j.nn.Module;
import org.ddp4j.nn.functional.Functional;
import org.ddp4j.nn.parallel.DistributedDataParallel;
import org.ddp4j.nn.utils.ClipGradNorm;
import org.ddp4j.distributed.optim.ZeroRedundancyOptimizer;
import org.ddp4j.optim.AdamW;
import org.ddp4j.optim.Optimizer;
import org.ddp4j.optim.StepLR;
import org.ddp4j.tensor.Generator;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;
import org.ddp4j.testing.Assertions2;
import org.ddp4j.testing.ParameterValues;
import org.ddp4j.testing.Ranks;
import org.ddp4j.vision.models.ResNet;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * ZeroRedundancyOptimizer and fully_shard on the vision models against DistributedDataParallel +
 * AdamW on 2 and 3 ranks: the ConvNet (its two conv stages as units, then the root) and a ResNet-18
 * (each of its four stages a unit, batch norms inside), 5 AdamW steps with clipping and StepLR.
 * ZeRO gives DDP's bits; fully_shard the same parameters within 1e-6.
 */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class FullyShardVisionTest {
    private static final Duration TIMEOUT = Duration.ofSeconds(120);
    private static final int STEPS = 5;

    private static void compare(int world, Function<Integer, Module> make, Function<Module, List<Module>> units,
            long[] inputShape, int classes) throws Exception {
        Ranks.withGroups(world, TIMEOUT, (rank, group) -> {
            Module ddpNet = make.apply(rank);
            Module zeroNet = make.apply(rank);
            Module fsdpNet = make.apply(rank);
            DistributedDataParallel ddp = new DistributedDataParallel(ddpNet, group,
                    DistributedDataParallel.DEFAULT_BUCKET_CAP_BYTES);
            DistributedDataParallel zero = new DistributedDataParallel(zeroNet, group,
                    DistributedDataParallel.DEFAULT_BUCKET_CAP_BYTES);
            FSDPModule fsdp = shard(fsdpNet, units.apply(fsdpNet), group);
            // eps 1e-4: some gradients are zero up to rounding (as in GPT2DdpTest)
            AdamW.Options adamW = AdamW.Options.defaults().lr(1e-3).eps(1e-4);
            AdamW ddpOpt = new AdamW(ddpNet.parameters(), adamW);
            ZeroRedundancyOptimizer zeroOpt = new ZeroRedundancyOptimizer(List.of(Map.of("params", zeroNet.parameters())),
                    groups -> new AdamW(groups, adamW), group);
            AdamW fsdpOpt = new AdamW(fsdp.parameters(), adamW);
            Map<Module, Optimizer> optimizers = Map.of(ddp, ddpOpt, zero, zeroOpt, fsdp, fsdpOpt);
            Map<Module, StepLR> schedules = Map.of(ddp, new StepLR(ddpOpt, 1, 0.5), zero, new StepLR(zeroOpt, 1, 0.5),
                    fsdp, new StepLR(fsdpOpt, 1, 0.5));
            for (int step = 0; step < STEPS; step++) {
                for (Module model : List.of(ddp, zero, fsdp)) {
                    Optimizer opt = optimizers.get(model);
                    try (var scope = Tensors.scope()) {
                        opt.zeroGrad();
                        Generator data = new Generator(100L * step + rank);
                        long n = 1;
                        for (long d : inputShape) {
                            n *= d;
                        }
                        Tensor x = Tensor.of(data.uniform((int) n, -1f, 1f), inputShape);
                        long[] labels = new long[(int) inputShape[0]];
                        for (int i = 0; i < labels.length; i++) {
                            labels[i] = data.nextInt(classes);
                        }
                        Functional.crossEntropy(model.forward(x), Tensor.ofLongs(labels, labels.length)).backward();
                        ClipGradNorm.clipGradNorm(model.parameters(), 1.0);
                        opt.step();
                        schedules.get(model).step();
                    }
                }
                assertArrayEquals(ParameterValues.of(ddpNet), ParameterValues.of(zeroNet),
                        "ZeRO: the bits of DDP + AdamW after step " + step + " on rank " + rank);
                Map<String, Tensor> full = fsdp.fullStateDict();
                for (Map.Entry<String, Tensor> p : ddpNet.namedParameters().entrySet()) {
                    Assertions2.assertClose(p.getValue().toFloatArray(), full.get(p.getKey()).toFloatArray(), 1e-6, 1e-6,
                            "fully_shard: " + p.getKey() + " after step " + step + " on rank " + rank);
                }
                full.values().forEach(Tensor::close);
            }
            ddpOpt.close();
            zeroOpt.close();
            fsdpOpt.close();
            ddp.close();
            zero.close();
            ddpNet.close();
            zeroNet.close();
            fsdp.close();
            return null;
        });
    }

    private static FSDPModule shard(Module net, List<Module> units, ProcessGroup group) {
        FullyShardOptions options = FullyShardOptions.defaults().processGroup(group);
        for (Module unit : units) {
            FullyShard.fullyShard(unit, options);
        }
        return FullyShard.fullyShard(net, options);
    }

    @ParameterizedTest
    @ValueSource(ints = {2, 3})
    void convNetTrainsAsDistributedDataParallel(int world) throws Exception {
        compare(world, rank -> new ConvNet(10, new Generator(3 + rank)),
                net -> new ArrayList<>(List.of(net.namedChildren().get("layer1"), net.namedChildren().get("layer2"))),
                new long[] {3, 1, 28, 28}, 10);
    }

    @ParameterizedTest
    @ValueSource(ints = {2, 3})
    void resNet18TrainsAsDistributedDataParallel(int world) throws Exception {
        compare(world, rank -> ResNet.resnet18(ResNet.Options.defaults().numClasses(10).cifarStem(true)
                        .generator(new Generator(3 + rank))),
                net -> List.of(((ResNet) net).layer(1), ((ResNet) net).layer(2), ((ResNet) net).layer(3),
                        ((ResNet) net).layer(4)),
                new long[] {2, 3, 16, 16}, 10);
    }
}
