package org.ddp4j.examples;

import java.time.Duration;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import org.ddp4j.data.Batch;
import org.ddp4j.data.DataLoader;
import org.ddp4j.data.MnistDataset;
import org.ddp4j.distributed.Distributed;
import org.ddp4j.nn.parallel.DistributedDataParallel;
import org.ddp4j.data.DistributedSampler;
import org.ddp4j.multiprocessing.Spawn;
import org.ddp4j.nn.CrossEntropyLoss;
import org.ddp4j.optim.SGD;
import org.ddp4j.tensor.Device;
import org.ddp4j.tensor.Generator;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;
import picocli.CommandLine;
import org.ddp4j.internal.VersionProvider;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * Seed 003's program in Java: the two-conv network on Fashion-MNIST, started from code as the
 * seed's {@code mp.spawn(train, nprocs=args.gpus, args=(args,))} does, with the seed's flags:
 * {@code -n} nodes, {@code -g} processes per node, {@code -nr} this node's index; rank =
 * nr × g + local index, world size = n × g. MASTER_ADDR and MASTER_PORT are set by the program
 * (127.0.0.1 and 8888 unless the environment has them); the workers join through {@code env://},
 * on gloo (nccl when the node has a GPU per process). Local rank 0 of each node prints
 * {@code Epoch [e/E], Step [i/N], Loss: x} every 100 steps and
 * {@code Training complete in: H:MM:SS.ffffff}; every rank prints its summary line, and global rank
 * 0 the test accuracy.
 *
 * <pre>
 * java -cp "java/target/classes:java/target/lib/*" org.ddp4j.examples.MnistDistributed -n 1 -g 2 -nr 0
 * # two nodes: the same command with -n 2 -g 1 -nr 0 on the first and -nr 1 on the second
 * # (MASTER_ADDR=first node's address in both environments when they are different machines)
 * </pre>
 */
@Command(name = "MnistDistributed", mixinStandardHelpOptions = true, versionProvider = VersionProvider.class,
        description = "Seed 003's Fashion-MNIST trainer: spawns -g worker JVMs on this node (no launcher needed).")
public final class MnistDistributed implements Callable<Integer> {
    /** The seed's rendezvous address and port, used when the environment does not set them. */
    static final String DEFAULT_MASTER_ADDR = "127.0.0.1";
    static final String DEFAULT_MASTER_PORT = "8888";

    @Option(names = {"-n", "--nodes"}, description = "Number of nodes (default: ${DEFAULT-VALUE}).")
    int nodes = 1;

    @Option(names = {"-g", "--gpus"}, description = "Processes per node, one per GPU when there are GPUs (default: ${DEFAULT-VALUE}).")
    int gpus = 1;

    @Option(names = {"-nr", "--nr"}, description = "This node's index in [0, nodes) (default: ${DEFAULT-VALUE}).")
    int nr = 0;

    @Option(names = "--epochs", description = "Epochs (default: ${DEFAULT-VALUE}).")
    int epochs = 2;

    @Option(names = "--lr", description = "SGD learning rate, the seed's (default: ${DEFAULT-VALUE}).")
    double lr = 1e-4;

    @Mixin
    FashionMnistOption dataset = new FashionMnistOption();

    @Option(names = "--log-interval", description = "Print the loss every N steps, the seed's 100 (default: ${DEFAULT-VALUE}).")
    int logInterval = 100;

    @Mixin
    DeviceOption deviceOption = new DeviceOption();

    /** The command line as given, passed on to every worker. */
    private String[] commandLine = new String[0];

    public static void main(String[] args) {
        MnistDistributed program = new MnistDistributed();
        program.commandLine = args.clone();
        System.exit(DemoCommandLine.execute(program, args));
    }

    /** The parent: checks the flags and the data, sets the rendezvous address, spawns -g workers and waits. */
    @Override
    public Integer call() {
        check();
        new MnistDataset(dataset.data, true, 1); // a missing data folder fails here, once, not in every worker
        Map<String, String> env = System.getenv();
        Spawn.of(MnistDistributed::train)
                .nprocs(gpus)
                .rankOffset(nr * gpus)
                .env("MASTER_ADDR", env.getOrDefault("MASTER_ADDR", DEFAULT_MASTER_ADDR))
                .env("MASTER_PORT", env.getOrDefault("MASTER_PORT", DEFAULT_MASTER_PORT))
                .args(commandLine)
                .run();
        return 0;
    }

    private void check() {
        if (nodes < 1 || gpus < 1) {
            throw new IllegalArgumentException("-n " + nodes + " -g " + gpus + ": the number of nodes and of processes per"
                    + " node must be at least 1");
        }
        if (nr < 0 || nr >= nodes) {
            throw new IllegalArgumentException("-nr " + nr + " is not a node index for -n " + nodes + ": use 0 to "
                    + (nodes - 1));
        }
        if (logInterval < 1) {
            throw new IllegalArgumentException("--log-interval " + logInterval + ": print every 1 or more steps");
        }
        if (epochs < 1) {
            throw new IllegalArgumentException("--epochs " + epochs + ": train at least 1 epoch");
        }
    }

    /** One worker, as the seed's {@code train(gpu, args)}: rank = nr × g + gpu. */
    static void train(int gpu, String[] args) {
        MnistDistributed a = CommandLine.populateCommand(new MnistDistributed(), args);
        int rank = a.nr * a.gpus + gpu;
        int world = a.nodes * a.gpus;
        Device device = a.deviceOption.resolve(System.getenv()); // spawn set LOCAL_RANK and LOCAL_WORLD_SIZE
        Distributed.initProcessGroup(DeviceOption.backendFor(device), "env://", world, rank);

        MnistDataset train = a.dataset.train();
        DistributedSampler sampler = new DistributedSampler(train.size(), world, rank, true, 0, false);
        DataLoader loader = new DataLoader(train, 100, sampler, false);
        DistributedDataParallel model = new DistributedDataParallel(new ConvNet(10, new Generator(0)).to(device));
        CrossEntropyLoss criterion = new CrossEntropyLoss();
        SGD optimizer = new SGD(model.parameters(), a.lr);

        int totalStep = loader.size();
        long steps = 0;
        float lastLoss = Float.NaN;
        long start = System.nanoTime();
        for (int epoch = 0; epoch < a.epochs; epoch++) {
            // the seed never calls set_epoch, so every epoch sees the same order
            int i = 0;
            for (Batch batch : loader) {
                try (batch; var scope = Tensors.scope()) {
                    Tensor loss = criterion.forward(model.forward(batch.inputs().to(device)), batch.labels().to(device));
                    optimizer.zeroGrad();
                    loss.backward();
                    optimizer.step();
                    i++;
                    steps++;
                    if (i % a.logInterval == 0 || i == totalStep) {
                        lastLoss = loss.item();
                        if (gpu == 0 && i % a.logInterval == 0) {
                            System.out.printf(Locale.ROOT, "Epoch [%d/%d], Step [%d/%d], Loss: %.4f%n",
                                    epoch + 1, a.epochs, i, totalStep, lastLoss);
                        }
                    }
                }
            }
        }
        long nanos = System.nanoTime() - start;
        if (gpu == 0) {
            System.out.println("Training complete in: " + elapsed(Duration.ofNanos(nanos)));
        }
        System.out.println(new Summary(rank, world, steps, nanos / 1e9, 100, lastLoss).line());
        if (rank == 0) {
            MnistDataset test = a.dataset.test();
            double accuracy = ConvNetDemo.testAccuracy(model, test, 100, device);
            System.out.printf(Locale.ROOT, "Test accuracy of the model on the %d test images: %.2f %%%n", test.size(), accuracy * 100);
            System.out.printf(Locale.ROOT, "summary test_accuracy=%.4f%n", accuracy);
        }
        Distributed.destroyProcessGroup();
    }

    /** Python's {@code str(timedelta)}: H:MM:SS.ffffff (microseconds). */
    static String elapsed(Duration d) {
        return String.format(Locale.ROOT, "%d:%02d:%02d.%06d", d.toHours(), d.toMinutesPart(), d.toSecondsPart(),
                d.toNanosPart() / 1000);
    }
}
