package org.ddp4j.examples;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;
import java.util.concurrent.Callable;
import org.ddp4j.data.Batch;
import org.ddp4j.data.DataLoader;
import org.ddp4j.data.Dataset;
import org.ddp4j.data.DistributedSampler;
import org.ddp4j.data.RandomSampler;
import org.ddp4j.data.Sampler;
import org.ddp4j.distributed.Distributed;
import org.ddp4j.internal.VersionProvider;
import org.ddp4j.nn.CrossEntropyLoss;
import org.ddp4j.nn.parallel.DistributedDataParallel;
import org.ddp4j.nn.parallel.Join;
import org.ddp4j.optim.SGD;
import org.ddp4j.spark.PartitionDataset;
import org.ddp4j.tensor.Generator;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * The ConvNet of {@link ConvNetDemo} trained by one rank of a {@code SparkDistributor} job (or of
 * a launcher run: it reads only the torch environment), printing on every rank first where it runs,
 * then at the end its result:
 * <pre>
 * | rank R of W: local rank L of LW[, CUDA_VISIBLE_DEVICES=...]
 * check rank=R world=W rows=N steps=S loss=L param_crc=C
 * </pre>
 * N: the examples this rank trained on per epoch; S: its training steps; L: its last loss; C: the
 * CRC-32 of the parameters' float32 little-endian bytes (as ResNetSynthetic's), equal on every rank
 * when DDP kept them in step. By default each rank samples its share of Fashion-MNIST with a
 * {@link DistributedSampler} (as ConvNetDemo, so a run equals a launcher run of the same
 * arguments); with {@code --partition} it trains on the rows of its own Spark partition
 * ({@link PartitionDataset#open()}, in random order seeded by {@code --seed} + rank) inside
 * {@code ddp.join()}, so partitions of different sizes train to one model.
 *
 * <p>From a Spark driver: {@code new SparkDistributor(2).run("org.ddp4j.examples.SparkConvNetTrain", "--limit", "400")}.
 */
@Command(name = "SparkConvNetTrain", mixinStandardHelpOptions = true, versionProvider = VersionProvider.class,
        description = "The ConvNet on Fashion-MNIST or on this rank's Spark partition, one rank of a SparkDistributor job.")
public final class SparkConvNetTrain implements Callable<Integer> {
    @Mixin
    FashionMnistOption dataset = new FashionMnistOption();

    @Option(names = "--epochs", description = "Epochs (default: ${DEFAULT-VALUE}).")
    int epochs = 1;

    @Option(names = "--batch-size", description = "Images per rank per step (default: ${DEFAULT-VALUE}).")
    int batchSize = 50;

    @Option(names = "--lr", description = "SGD learning rate (default: ${DEFAULT-VALUE}).")
    double lr = 0.01;

    @Option(names = "--momentum", description = "SGD momentum (default: ${DEFAULT-VALUE}).")
    double momentum = 0.9;

    @Option(names = "--seed", description = "Seed of the initial weights and the sampling order (default: ${DEFAULT-VALUE}).")
    long seed = 0;

    @Option(names = "--partition", description = "Train on this rank's Spark partition (DDP4J_SPARK_PARTITION, written by"
            + " SparkDistributor.runOnPartitions) inside ddp.join() instead of Fashion-MNIST with a DistributedSampler.")
    boolean partition;

    @Option(names = "--started-dir", paramLabel = "DIR",
            description = "After its first step each rank creates DIR/rank<R>.started (a test waits for it to stop a rank"
                    + " mid-training).")
    Path startedDir;

    public static void main(String[] args) {
        System.exit(DemoCommandLine.execute(new SparkConvNetTrain(), args));
    }

    @Override
    public Integer call() {
        if (epochs < 1 || batchSize < 1) {
            throw new IllegalArgumentException("--epochs and --batch-size must be at least 1, got " + epochs + " and " + batchSize);
        }
        Dataset train = partition ? PartitionDataset.open() : dataset.train();
        Distributed.initProcessGroup("gloo");
        int rank = Distributed.getRank();
        int world = Distributed.getWorldSize();
        // where this rank runs, for the Spark task's log
        String gpus = System.getenv("CUDA_VISIBLE_DEVICES");
        System.out.printf(Locale.ROOT, "| rank %d of %d: local rank %s of %s%s%n", rank, world, System.getenv("LOCAL_RANK"),
                System.getenv("LOCAL_WORLD_SIZE"), gpus == null ? "" : ", CUDA_VISIBLE_DEVICES=" + gpus);
        DistributedSampler shared = partition ? null : new DistributedSampler(train.size(), world, rank, true, seed, false);
        Sampler sampler = partition ? new RandomSampler(train.size(), new Generator(seed + rank)) : shared;
        DataLoader loader = new DataLoader(train, batchSize, sampler, false);
        DistributedDataParallel model = new DistributedDataParallel(new ConvNet(10, new Generator(seed)));
        CrossEntropyLoss criterion = new CrossEntropyLoss();
        SGD optimizer = new SGD(model.parameters(), SGD.Options.defaults().lr(lr).momentum(momentum));
        long steps = 0;
        float lastLoss = Float.NaN;
        for (int epoch = 0; epoch < epochs; epoch++) {
            if (shared != null) {
                shared.setEpoch(epoch);
            }
            // unequal partitions: a rank that runs out shadows the others' all-reduces until all are done
            try (Join join = partition ? model.join() : null) {
                for (Batch batch : loader) {
                    try (batch; var scope = Tensors.scope()) {
                        Tensor loss = criterion.forward(model.forward(batch.inputs()), batch.labels());
                        loss.backward();
                        optimizer.step();
                        optimizer.zeroGrad();
                        lastLoss = loss.item();
                    }
                    if (++steps == 1 && startedDir != null) {
                        markStarted(rank);
                    }
                }
            }
        }
        System.out.printf(Locale.ROOT, "check rank=%d world=%d rows=%d steps=%d loss=%s param_crc=%08x%n", rank, world,
                sampler.size(), steps, Float.isNaN(lastLoss) ? "nan" : String.format(Locale.ROOT, "%.6f", lastLoss),
                ResNetSynthetic.parameterCrc(model.module().parameters()));
        Distributed.destroyProcessGroup();
        return 0;
    }

    private void markStarted(int rank) {
        try {
            Files.createDirectories(startedDir);
            Files.writeString(startedDir.resolve("rank" + rank + ".started"), Long.toString(ProcessHandle.current().pid()));
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write the --started-dir marker in " + startedDir, e);
        }
    }
}
