package org.ddp4j.examples;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Locale;
import java.util.concurrent.Callable;
import org.ddp4j.cuda.Cuda;
import org.ddp4j.data.Batch;
import org.ddp4j.data.DataLoader;
import org.ddp4j.data.MnistDataset;
import org.ddp4j.distributed.Distributed;
import org.ddp4j.nn.parallel.DistributedDataParallel;
import org.ddp4j.nn.parallel.GradientAccumulation;
import org.ddp4j.amp.GradScaler;
import org.ddp4j.nn.SyncBatchNorm;
import org.ddp4j.distributed.algorithms.ddpcommhooks.CommHookState;
import org.ddp4j.serialization.Checkpoint;
import org.ddp4j.data.DistributedSampler;
import org.ddp4j.nn.CrossEntropyLoss;
import org.ddp4j.nn.Module;
import org.ddp4j.optim.LRScheduler;
import org.ddp4j.optim.Optimizer;
import org.ddp4j.tensor.Device;
import org.ddp4j.tensor.Generator;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;
import org.ddp4j.utils.EpochProgress;
import org.ddp4j.utils.TrainingPlot;
import org.ddp4j.internal.VersionProvider;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * The two-conv network on Fashion-MNIST under DDP (the job of the anchor's mnist_ddp.py):
 * CrossEntropyLoss, SGD with momentum (or Adam / AdamW: {@code --optimizer}, with an optional
 * per-epoch {@code --scheduler} and {@code --dropout}), a DistributedSampler per rank. Rank 0 prints
 * {@code Epoch [e/E], Step [i/N], Loss: x} every {@code --log-every} (100) steps, or, when the launcher's output is a
 * terminal ({@code DDP4J_PROGRESS=1}), a progress bar per epoch ({@link EpochProgress}); then the
 * training time and the test accuracy. Start it with {@code scripts/ddp4j-run --nproc-per-node 2 org.ddp4j.examples.ConvNetDemo}.
 */
@Command(name = "ConvNetDemo", mixinStandardHelpOptions = true, versionProvider = VersionProvider.class,
        description = "Two-conv network on Fashion-MNIST with DDP (run under scripts/ddp4j-run).")
public class ConvNetDemo implements Callable<Integer> {
    @Option(names = "--epochs", description = "Epochs (default: ${DEFAULT-VALUE}).")
    int epochs = 1;

    @Option(names = "--batch-size", description = "Images per rank per step (default: ${DEFAULT-VALUE}).")
    int batchSize = 100;

    @Option(names = "--optimizer", paramLabel = "sgd|adam|adamw",
            description = "The optimizer (default: ${DEFAULT-VALUE}): SGD with --momentum, or Adam / AdamW with PyTorch's"
                    + " betas and eps.")
    OptimizerChoice optimizerChoice = OptimizerChoice.sgd;

    @Option(names = "--lr", description = "Learning rate, the peak with --scheduler onecycle (default: 0.05 for sgd,"
            + " 0.1 in ResNetDemo; 0.001 for adam and adamw, PyTorch's Adam default).")
    Double lr;

    @Option(names = "--momentum", description = "SGD momentum (default: ${DEFAULT-VALUE}; sgd only).")
    double momentum = 0.9;

    @Option(names = "--weight-decay", description = "Weight decay (default: PyTorch's: 0 for sgd and adam, 0.01 for adamw).")
    Double weightDecay;

    @Option(names = "--scheduler", paramLabel = "none|step|cosine|onecycle",
            description = "Learning-rate schedule (default: ${DEFAULT-VALUE}): step multiplies the lr by --gamma every epoch"
                    + " (StepLR(step_size=1), as PyTorch's MNIST example); cosine anneals it to 0 over --epochs"
                    + " (CosineAnnealingLR(T_max=epochs)); onecycle, stepped every batch, raises it from lr/25 to --lr"
                    + " over the first 30%% of the steps and anneals it to lr/25e4 by the last, cycling the momentum"
                    + " 0.95-0.85-0.95 in place of --momentum (OneCycleLR(max_lr=lr, total_steps=epochs*batches)).")
    SchedulerChoice schedulerChoice = SchedulerChoice.none;

    @Option(names = "--gamma", description = "StepLR's factor per epoch (default: ${DEFAULT-VALUE}, as PyTorch's MNIST"
            + " example; --scheduler step only).")
    double gamma = 0.7;

    @Option(names = "--dropout", paramLabel = "P",
            description = "Dropout probability before the final Linear (default: ${DEFAULT-VALUE}, no Dropout module).")
    double dropout = 0;

    @Mixin
    FashionMnistOption dataset = new FashionMnistOption();

    @Option(names = "--seed", description = "Seed for initialisation and shuffling (default: ${DEFAULT-VALUE}).")
    long seed = 0;

    @Option(names = "--test-batch-size", description = "Images per evaluation batch (default: ${DEFAULT-VALUE}).")
    int testBatchSize = 100;

    @Option(names = "--save", paramLabel = "FILE",
            description = "After each epoch, rank 0 writes the run's state to FILE, one safetensors file (Checkpoint): the"
                    + " model (model/<PyTorch's name>), the optimizer, the schedule, the epoch, the generator of the Dropout"
                    + " masks and the communication hook's state; a save that fails or is killed leaves the previous file whole.")
    Path save;

    @Option(names = "--resume", paramLabel = "FILE",
            description = "Start from a checkpoint written by --save: the model, the optimizer's state (SGD's momentum,"
                    + " Adam's moments; use the same --optimizer), the schedule, the generator and the epoch counter;"
                    + " --epochs stays the total. Every rank reads FILE and its .optim twin (copy them to each node).")
    Path resume;

    @Option(names = "--plot", paramLabel = "FILE.png",
            description = "Rank 0 draws the training loss (every logged step) and the test accuracy into FILE.png.")
    Path plot;

    @Option(names = "--log-every", paramLabel = "N",
            description = "Rank 0 logs the loss every N steps (default: ${DEFAULT-VALUE}).")
    int logEvery = 100;

    @Option(names = "--accumulate", paramLabel = "N",
            description = "Micro-batches per optimizer step (default: ${DEFAULT-VALUE}): gradients accumulate over N batches"
                    + " of --batch-size under noSync() and are all-reduced once, on the last (GradientAccumulation); the"
                    + " effective batch is N x --batch-size per rank.")
    int accumulate = 1;

    @Option(names = "--workers", paramLabel = "N",
            description = "DataLoader worker threads preparing batches ahead of the step (default: ${DEFAULT-VALUE}: on the"
                    + " training thread); the batches are the same either way.")
    int workers = 0;

    @Option(names = "--report-allocations",
            description = "Append allocations_per_step=A to the summary line: system allocations (malloc on the CPU, cudaMalloc on a GPU) per training step after the second.")
    boolean reportAllocations;

    @Mixin
    DeviceOption deviceOption = new DeviceOption();

    @Mixin
    DdpTuningOptions tuning = new DdpTuningOptions();

    /** --comm-hook powersgd's startPowerSGDIter: PyTorch's 1000 would never compress in a 600-step epoch. */
    static final long POWER_SGD_START_ITERATION = 100;

    public static void main(String[] args) {
        System.exit(DemoCommandLine.execute(new ConvNetDemo(), args));
    }

    /** The network to train, initialised from {@code generator}: here the {@link ConvNet} (ResNetDemo overrides it). */
    Module createModel(Generator generator) {
        return new ConvNet(10, dropout, generator);
    }

    /** The lr when --lr is absent, or null for the optimizer choice's own default (ResNetDemo overrides it). */
    Double defaultLr(OptimizerChoice choice) {
        return null;
    }

    /** The model's name in the plot's title. */
    String modelName() {
        return "ConvNet";
    }

    @Override
    public Integer call() {
        if (accumulate < 1) {
            throw new IllegalArgumentException("--accumulate must be at least 1 (micro-batches per optimizer step), got "
                    + accumulate);
        }
        if (workers < 0) {
            throw new IllegalArgumentException("--workers must be 0 (batches made on the training thread) or more, got "
                    + workers);
        }
        if (logEvery <= 0) {
            throw new IllegalArgumentException("--log-every must be positive (steps between loss lines), got " + logEvery);
        }
        if (!(dropout >= 0 && dropout < 1)) {
            throw new IllegalArgumentException("--dropout " + dropout + " is not a probability in [0, 1): it is the chance"
                    + " of zeroing each input of the final Linear, e.g. --dropout 0.2");
        }
        Device device = deviceOption.resolve(System.getenv());
        // Before the rendezvous: every rank fails at once, none waits for the others.
        MnistDataset train = dataset.train();
        if (train.size() == 0) {
            throw new IllegalArgumentException("the training set in " + dataset.data + " holds no images, so there is nothing to"
                    + " train on: point --data at a folder with Fashion-MNIST's (or MNIST's) IDX files");
        }
        TrainingPlot.checkPath(plot);
        CommHookChoice hookChoice = tuning.hook();
        Checkpoint resumed = resume == null ? null : TrainingCheckpoint.read(resume); // validates the file
        int firstEpoch = resumed == null ? 0 : TrainingCheckpoint.epochsDone(resumed);
        if (firstEpoch >= epochs) {
            throw new IllegalArgumentException(resume + " was saved after epoch " + firstEpoch + " and --epochs is " + epochs
                    + ", so there is nothing left to train: raise --epochs (the total, counting the epochs done)");
        }
        Distributed.initProcessGroup(DeviceOption.backendFor(device));
        int rank = Distributed.getRank();
        int world = Distributed.getWorldSize();
        if (device.isCuda()) {
            System.out.println("| rank " + rank + " trains on " + DeviceOption.describe(device, System.getenv()));
        }

        DistributedSampler sampler = new DistributedSampler(train.size(), world, rank, true, seed, false);
        DataLoader loader = new DataLoader(train, batchSize, sampler, false,
                DataLoader.Options.defaults().numWorkers(workers));
        Generator generator = new Generator(seed); // initialises the model, then draws its Dropout masks
        Module net = createModel(generator).to(device);
        if (tuning.syncBn) {
            SyncBatchNorm.convertSyncBatchnorm(net); // in place, before DDP, as in PyTorch
        }
        DistributedDataParallel model = new DistributedDataParallel(net);
        GradScaler scaler = tuning.autocast.scaler();
        Object hookState = hookChoice == null ? null
                : hookChoice.register(model, model.processGroup(), POWER_SGD_START_ITERATION);
        CrossEntropyLoss criterion = new CrossEntropyLoss();
        Optimizer optimizer = optimizerChoice.create(model.parameters(), lr != null ? lr : defaultLr(optimizerChoice), momentum,
                weightDecay);
        GradientAccumulation accumulation = new GradientAccumulation(model, accumulate);
        int optimizerStepsPerEpoch = (loader.size() + accumulate - 1) / accumulate;
        LRScheduler schedule = schedulerChoice.create(optimizer, epochs, optimizerStepsPerEpoch, gamma);
        TrainingCheckpoint.Run run = new TrainingCheckpoint.Run(model.module(), optimizer, schedule, generator,
                hookState instanceof CommHookState s ? s : null, scaler.isEnabled() ? scaler : null);
        if (resumed != null) {
            // every rank reads the file, so each restores its own (equal) momentum buffers and generator
            try (var scope = Tensors.scope()) { // frees the loaded copies
                TrainingCheckpoint.restore(resume, resumed, run);
            }
            if (rank == 0) {
                System.out.println("Resumed from " + resume + " after epoch " + firstEpoch);
            }
        }

        if (tuning.printModel && rank == 0) {
            System.out.println(model);
        }
        int totalSteps = loader.size();
        TrainingPlot curve = plot != null && rank == 0 ? new TrainingPlot(modelName() + " on Fashion-MNIST, " + world + " rank(s)",
                "training loss (rank 0, mean since the previous point)") : null;
        long steps = 0;
        long plotStepsBefore = (long) firstEpoch * totalSteps; // after a resume the plot's x axis goes on from there
        double plotLossSum = 0; // rank 0's losses since the last plotted point (--plot only)
        int plotLossCount = 0;
        float lastLoss = Float.NaN;
        long start = System.nanoTime();
        long allocationsAfterStep2 = -1;
        boolean drawBars = EpochProgress.enabled(rank, System.getenv());
        for (int epoch = firstEpoch; epoch < epochs; epoch++) {
            sampler.setEpoch(epoch);
            int i = 0;
            // on a terminal, rank 0 draws a bar instead of its "Epoch [e/E], Step [i/N]" lines
            EpochProgress bar = drawBars ? EpochProgress.start(System.out, System.getenv(), epoch, epochs, totalSteps) : null;
            for (var micro : accumulation.over(loader)) {
                try (micro; Batch batch = micro.batch(); var scope = Tensors.scope()) {
                    Tensor loss;
                    try (var ac = tuning.autocast.scope(device)) {
                        loss = criterion.forward(model.forward(batch.inputs().to(device)), batch.labels().to(device));
                    }
                    micro.backward(scaler.scale(loss));
                    if (micro.syncs()) {
                        scaler.step(optimizer); // skips a step whose gradients hold inf/NaN (fp16), on every rank
                        scaler.update();
                        optimizer.zeroGrad();
                        if (schedule != null && schedulerChoice.perBatch()) {
                            schedule.step();
                        }
                    }
                    i++;
                    steps++;
                    if (curve != null) {
                        plotLossSum += loss.item();
                        plotLossCount++;
                    }
                    if (steps == 2) {
                        allocationsAfterStep2 = allocationCount(device);
                    }
                    if (i % logEvery == 0 || i == totalSteps) {
                        lastLoss = loss.item();
                        if (curve != null) {
                            curve.addLoss(plotStepsBefore + steps, plotLossSum / plotLossCount);
                            plotLossSum = 0;
                            plotLossCount = 0;
                        }
                        if (bar != null) {
                            bar.showLoss(lastLoss);
                        } else if (rank == 0 && i % logEvery == 0) {
                            System.out.printf(Locale.ROOT, "Epoch [%d/%d], Step [%d/%d], Loss: %.4f%n",
                                    epoch + 1, epochs, i, totalSteps, lastLoss);
                        }
                    }
                    if (bar != null) {
                        bar.step();
                    }
                }
            }
            if (bar != null) {
                bar.close();
            }
            if (schedule != null && !schedulerChoice.perBatch()) {
                schedule.step();
            }
            if (save != null && rank == 0) {
                TrainingCheckpoint.save(save, run, epoch + 1);
            }
        }
        double seconds = (System.nanoTime() - start) / 1e9;
        loader.close(); // stops the worker threads
        if (rank == 0) {
            System.out.println("Training complete in: " + format(Duration.ofNanos((long) (seconds * 1e9))));
        }
        String summary = new Summary(rank, world, steps, seconds, batchSize, lastLoss).line()
                + " parameters_crc32=" + StateDigest.of(model.module());
        if (reportAllocations) {
            // steps 3..N: the first two fill the allocator's cache (and DDP's buckets)
            long counted = allocationsAfterStep2 < 0 ? 0 : steps - 2;
            double perStep = counted == 0 ? 0 : (double) (allocationCount(device) - allocationsAfterStep2) / counted;
            summary += String.format(Locale.ROOT, " allocations_per_step=%.2f", perStep);
        }
        System.out.println(summary);
        if (rank == 0) {
            if (testBatchSize != batchSize) {
                Tensors.emptyCache(); // the cached training blocks do not fit evaluation's shapes
            }
            MnistDataset test = dataset.test();
            double accuracy = testAccuracy(model, test, testBatchSize, device);
            System.out.printf(Locale.ROOT, "Test accuracy of the model on the %d test images: %.2f %%%n", test.size(), accuracy * 100);
            System.out.printf(Locale.ROOT, "summary test_accuracy=%.4f%n", accuracy);
            if (curve != null) {
                curve.addAccuracy(plotStepsBefore + steps, accuracy);
                curve.write(plot);
                System.out.println("Plot written to " + plot);
            }
        }
        Distributed.destroyProcessGroup();
        return 0;
    }

    /** System allocations so far on the training device: malloc on the CPU, cudaMalloc on a GPU. */
    private static long allocationCount(Device device) {
        return device.isCuda() ? Cuda.allocationCount() : Tensors.nativeAllocationCount();
    }

    /** Fraction of test images whose argmax logit is the label, in eval mode. */
    static double testAccuracy(DistributedDataParallel model, MnistDataset test, int batchSize, Device device) {
        model.module().eval();
        long correct = 0;
        try (var noGrad = Tensors.noGrad()) {
            for (Batch batch : new DataLoader(test, batchSize)) {
                try (batch; var scope = Tensors.scope()) {
                    long[] predicted = model.module().forward(batch.inputs().to(device)).argmax(1).toLongArray();
                    long[] labels = batch.labels().toLongArray();
                    for (int i = 0; i < labels.length; i++) {
                        correct += predicted[i] == labels[i] ? 1 : 0;
                    }
                }
            }
        }
        model.module().train();
        return (double) correct / test.size();
    }

    private static String format(Duration d) {
        return String.format(Locale.ROOT, "%d:%02d:%06.3f", d.toHours(), d.toMinutesPart(), d.toSecondsPart() + d.toNanosPart() / 1e9);
    }
}
