package org.ddp4j.examples;

import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.stream.Collectors;
import java.util.zip.CRC32;
import org.ddp4j.amp.Autocast;
import org.ddp4j.amp.GradScaler;
import org.ddp4j.distributed.Distributed;
import org.ddp4j.distributed.environment.ClusterEnvironment;
import org.ddp4j.nn.CrossEntropyLoss;
import org.ddp4j.nn.Module;
import org.ddp4j.nn.SyncBatchNorm;
import org.ddp4j.nn.parallel.DistributedDataParallel;
import org.ddp4j.nn.parallel.DistributedDataParallelOptions;
import org.ddp4j.optim.Optimizer;
import org.ddp4j.optim.SGD;
import org.ddp4j.serialization.SafeTensors;
import org.ddp4j.tensor.DType;
import org.ddp4j.tensor.Generator;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Threads;
import org.ddp4j.tensor.Tensors;
import org.ddp4j.vision.models.ResNet;
import org.ddp4j.internal.VersionProvider;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * The synthetic-data ResNet benchmark (after Horovod's {@code pytorch_synthetic_benchmark.py}),
 * the job of {@code benchmarks/pytorch/resnet_synthetic.py} (PyTorch) and, where one is given,
 * a JavaCPP libtorch job ({@code JAVACPP_ANCHOR}), with their options and their last lines, so that
 * {@code scripts/resnet-bench.sh} runs them side by side.
 *
 * <p>Model: torchvision's ResNet-18 or ResNet-50 ({@link ResNet}, 1000 classes, torchvision's
 * initialisation after {@code manual_seed(0)}, or {@code --weights}). One batch of random input
 * float32 [B, 3, S, S] and int64 labels in [0, 1000) is made once (or read with {@code --input})
 * and used for every step: {@code zeroGrad}, forward, {@link CrossEntropyLoss}, backward,
 * {@link SGD} (lr, momentum 0.9) step; {@code --warmup-steps} steps first, then {@code --steps}
 * timed ones. Distributed when {@code WORLD_SIZE > 1} (as set by {@code scripts/ddp4j-run}): the
 * model is then wrapped in {@link DistributedDataParallel} (parameters and buffers broadcast from
 * rank 0, buckets rebuilt in gradient order after the first step); otherwise one process, no group.
 *
 * <p>Rank 0 first prints a {@code # ddp4j ...} line with the settings; every rank ends with
 * <pre>
 * check rank=R loss=L param_sum=P param_crc=C
 * summary rank=R world=W model=M batch=B image=S steps=N seconds=T images_per_s=X params=P
 * </pre>
 * L: the last step's loss; P: the sum of all parameters in double; C: the CRC-32 of the
 * parameters' float32 little-endian bytes in {@code parameters()} order (ranks with equal
 * parameters print equal P and C); T covers the timed steps only, X = N · B / T images per second
 * of this rank; params: the number of model parameters.
 *
 * <p>Run: {@code scripts/ddp4j-run --nproc-per-node 2 org.ddp4j.examples.ResNetSynthetic --model resnet18}.
 */
@Command(name = "ResNetSynthetic", mixinStandardHelpOptions = true, versionProvider = VersionProvider.class,
        description = "ResNet-18/50 on synthetic data, images/s per rank (the anchors' resnet_synthetic.py).")
public final class ResNetSynthetic implements Callable<Integer> {
    /** Number of classes, as torchvision's default and the anchors'. */
    static final int NUM_CLASSES = 1000;

    @Option(names = "--model", paramLabel = "resnet18|resnet50", description = "The model (default: ${DEFAULT-VALUE}).")
    String model = "resnet50";

    @Option(names = "--batch-size", description = "Images per rank per step (default: ${DEFAULT-VALUE}).")
    int batchSize = 32;

    @Option(names = "--image-size", description = "Height and width of the input (default: ${DEFAULT-VALUE}).")
    int imageSize = 224;

    @Option(names = "--warmup-steps", description = "Untimed steps first (default: ${DEFAULT-VALUE}).")
    int warmupSteps = 2;

    @Option(names = "--steps", description = "Timed steps (default: ${DEFAULT-VALUE}).")
    int steps = 10;

    @Option(names = "--lr", description = "SGD learning rate, momentum 0.9 (default: ${DEFAULT-VALUE}).")
    double lr = 0.01;

    @Option(names = "--threads", description = "Intra-op threads of this rank: Threads.setNumThreads, as"
            + " torch.set_num_threads (default: 0, ddp4j's default: OMP_NUM_THREADS, else the cores this process may use"
            + " divided by the local ranks).")
    int threads = 0;

    @Option(names = "--bucket-cap-mb", description = "DDP's bucket_cap_mb (default: ${DEFAULT-VALUE}).")
    double bucketCapMb = 25;

    @Option(names = "--rank-seed", description = "Seed model and data with 0 + rank: ranks start from different"
            + " weights and train on different data; equal param_crc at the end shows that the broadcast and the"
            + " all-reduce worked.")
    boolean rankSeed;

    @Option(names = "--weights", paramLabel = "FILE",
            description = "Start from this state dict (safetensors with torchvision's names, e.g. saved by"
                    + " safetensors.torch.save_file(model.state_dict(), FILE)), loaded strictly.")
    Path weights;

    @Option(names = "--input", paramLabel = "FILE",
            description = "Train on this batch instead of random data: a safetensors file with 'input' float32"
                    + " [B, 3, S, S] and 'target' int64 [B] (B and S must be --batch-size and --image-size).")
    Path input;

    @Option(names = "--save", paramLabel = "FILE",
            description = "At the end, rank 0 writes the trained state dict (torchvision's names) to FILE (safetensors).")
    Path save;

    @Mixin
    DdpTuningOptions tuning = new DdpTuningOptions();

    /** Where the lines go (a test swaps it). */
    PrintStream out = System.out;

    public static void main(String[] args) {
        System.exit(DemoCommandLine.execute(new ResNetSynthetic(), args));
    }

    @Override
    public Integer call() {
        checkOptions();
        tuning.hook(); // a bad --comm-hook fails before the rendezvous
        // Before the rendezvous: every rank fails at once on a bad file, none waits for the others.
        Batch batch = input == null ? null : readInput(input, batchSize, imageSize);
        if (threads > 0) {
            Threads.setNumThreads(threads);
        }
        boolean distributed = worldSize(ClusterEnvironment.resolve(System.getenv()).get("WORLD_SIZE")) > 1;
        if (distributed) {
            Distributed.initProcessGroup("gloo");
        }
        int rank = distributed ? Distributed.getRank() : 0;
        int world = distributed ? Distributed.getWorldSize() : 1;

        long seed = rankSeed ? rank : 0;
        Generator generator = Generator.defaultGenerator();
        ResNet net = createModel(model, seed);
        if (weights != null) {
            net.loadTorchvisionWeights(weights);
        }
        if (batch == null) {
            batch = syntheticBatch(generator, batchSize, imageSize); // after the model, as the anchors
        }
        net.train();
        if (tuning.syncBn && distributed) {
            SyncBatchNorm.convertSyncBatchnorm(net); // in place, before DDP, as in PyTorch
        }
        long params = net.parameters().stream().mapToLong(Tensor::numel).sum();
        DistributedDataParallel ddp = distributed
                ? new DistributedDataParallel(net, DistributedDataParallelOptions.defaults().bucketCapMb(bucketCapMb))
                : null;
        CommHookChoice hook = tuning.hook();
        if (ddp != null && hook != null) {
            hook.register(ddp, ddp.processGroup(), Math.max(2, warmupSteps));
        }
        Module trained = ddp != null ? ddp : net;
        if (tuning.printModel && rank == 0) {
            out.println(trained);
        }
        CrossEntropyLoss criterion = new CrossEntropyLoss();
        Optimizer optimizer = new SGD(trained.parameters(), lr, 0.9, 0, 0, false);
        if (rank == 0) {
            out.printf(Locale.ROOT, "# ddp4j model=%s batch=%d image=%d world=%d threads=%d ddp=%d bucket_cap_mb=%s"
                            + " warmup=%d steps=%d weights=%s input=%s autocast=%s%s%n",
                    model, batchSize, imageSize, world, Threads.getNumThreads(), ddp != null ? 1 : 0, formatMb(bucketCapMb),
                    warmupSteps, steps, weights == null ? "-" : weights, input == null ? "random" : input,
                    tuning.autocast.describe(),
                    hook == null ? "" : " comm_hook=" + hook);
        }
        Precision precision = new Precision(tuning.autocast, tuning.autocast.scaler());

        float loss = Float.NaN;
        for (int i = 0; i < warmupSteps; i++) {
            loss = step(trained, optimizer, criterion, batch, precision);
        }
        long start = System.nanoTime();
        for (int i = 0; i < steps; i++) {
            loss = step(trained, optimizer, criterion, batch, precision);
        }
        double seconds = (System.nanoTime() - start) / 1e9;
        if (ddp != null && rank == 0) {
            List<Long> buckets = ddp.bucketBytes();
            out.println("# ddp buckets (MB, in all-reduce order): " + buckets.size() + " ["
                    + buckets.stream().map(b -> String.format(Locale.ROOT, "%.2f", b / 1048576.0)).collect(Collectors.joining(" "))
                    + "]");
        }

        List<Tensor> parameters = net.parameters();
        out.printf(Locale.ROOT, "check rank=%d loss=%s param_sum=%.10e param_crc=%08x%n", rank,
                Float.isNaN(loss) ? "nan" : String.format(Locale.ROOT, "%.6f", loss), parameterSum(parameters),
                parameterCrc(parameters));
        double imagesPerSecond = seconds > 0 ? steps * (double) batchSize / seconds : 0;
        out.printf(Locale.ROOT, "summary rank=%d world=%d model=%s batch=%d image=%d steps=%d seconds=%.3f"
                        + " images_per_s=%.2f params=%d%n",
                rank, world, model, batchSize, imageSize, steps, seconds, imagesPerSecond, params);
        if (save != null && rank == 0) {
            SafeTensors.saveFile(net.stateDict(), save, Map.of("format", "pt"));
        }
        if (distributed) {
            Distributed.barrier(); // no rank tears the group down while another still uses it
            Distributed.destroyProcessGroup();
        }
        return 0;
    }

    /** The synthetic (or --input) batch: input float32 [B, 3, S, S], target int64 [B]. */
    record Batch(Tensor input, Tensor target) {}

    private void checkOptions() {
        if (!model.equals("resnet18") && !model.equals("resnet50")) {
            throw new IllegalArgumentException("--model must be resnet18 or resnet50, got '" + model + "'");
        }
        positive("--batch-size", batchSize);
        positive("--image-size", imageSize);
        if (warmupSteps < 0 || steps < 0) {
            throw new IllegalArgumentException("--warmup-steps and --steps count steps, so they cannot be negative: got "
                    + warmupSteps + " and " + steps);
        }
        if (threads < 0) {
            throw new IllegalArgumentException("--threads " + threads + " is negative: give a thread count, or 0 for the default");
        }
        if (!(bucketCapMb > 0)) {
            throw new IllegalArgumentException("--bucket-cap-mb must be positive (MiB per DDP bucket), got " + bucketCapMb);
        }
        if (!(lr >= 0) || Double.isInfinite(lr)) {
            throw new IllegalArgumentException("--lr must be a finite number >= 0, got " + lr);
        }
        if (save != null) {
            Path folder = save.toAbsolutePath().getParent();
            if (folder == null || !Files.isDirectory(folder)) {
                throw new IllegalArgumentException("--save " + save + ": the folder " + folder + " does not exist; create it"
                        + " first or pick another path");
            }
        }
    }

    /** WORLD_SIZE as a number, 1 when unset (one process, no group, no DDP, as the anchors). */
    private static int worldSize(String value) {
        if (value == null || value.isBlank()) {
            return 1;
        }
        try {
            return Integer.parseInt(value.trim());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("WORLD_SIZE='" + value + "' is not a number of processes: unset it for one"
                    + " process, or start the ranks with scripts/ddp4j-run --nproc-per-node N");
        }
    }

    private static void positive(String option, int value) {
        if (value <= 0) {
            throw new IllegalArgumentException(option + " must be positive, got " + value);
        }
    }

    /**
     * torchvision's {@code resnet18()} / {@code resnet50()} with 1000 classes, initialised after
     * seeding the default generator with {@code seed} (as {@code torch.manual_seed(seed)} before the model).
     */
    static ResNet createModel(String name, long seed) {
        Generator.manualSeedAll(seed);
        return ResNet.of(name, ResNet.Options.defaults().numClasses(NUM_CLASSES));
    }

    /** Standard-normal input [B, 3, S, S] and labels uniform in [0, 1000), drawn from {@code generator} in that order. */
    static Batch syntheticBatch(Generator generator, int batchSize, int imageSize) {
        long n = (long) batchSize * 3 * imageSize * imageSize;
        if (n > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("--batch-size " + batchSize + " at --image-size " + imageSize + " makes "
                    + n + " input values per rank, more than 2^31 - 1: lower one of them");
        }
        Tensor x = Tensor.of(generator.normal((int) n), batchSize, 3, imageSize, imageSize).keep();
        float[] u = generator.uniform(batchSize, 0, NUM_CLASSES);
        long[] labels = new long[batchSize];
        for (int i = 0; i < batchSize; i++) {
            labels[i] = Math.min(NUM_CLASSES - 1, (long) u[i]); // a float draw can round up to 1000
        }
        return new Batch(x, Tensor.ofLongs(labels, batchSize).keep());
    }

    /**
     * Reads {@code input} float32 [B, 3, S, S] and {@code target} int64 [B] from a safetensors file.
     *
     * @throws IllegalArgumentException naming the file and the tensor when one is missing, of
     *     another dtype or shape than --batch-size and --image-size give, or a label is outside [0, 1000)
     */
    static Batch readInput(Path file, int batchSize, int imageSize) {
        Map<String, Tensor> tensors = SafeTensors.loadFile(file);
        Tensor x = tensors.get("input");
        Tensor y = tensors.get("target");
        if (x == null || y == null) {
            throw new IllegalArgumentException(file + " holds " + tensors.keySet() + ", not the tensors 'input' (float32 [B, 3,"
                    + " S, S]) and 'target' (int64 [B]) that --input reads");
        }
        long[] wantX = {batchSize, 3, imageSize, imageSize};
        if (x.dtype() != DType.FLOAT32 || !Arrays.equals(x.shape(), wantX)) {
            // Only a [B, 3, S, S] float32 file can be fixed by the options; say what else to change.
            boolean optionsFit = x.dtype() == DType.FLOAT32 && x.dim() == 4 && x.size(1) == 3 && x.size(2) == x.size(3);
            throw new IllegalArgumentException("'input' in " + file + " is " + x.describe() + ", but --batch-size "
                    + batchSize + " --image-size " + imageSize + " need float32" + Arrays.toString(wantX)
                    + (optionsFit ? ": pass the file's batch size and image size"
                            : ": write the file's 'input' as float32 [B, 3, S, S] (3 colour channels, square images)"));
        }
        if (y.dtype() != DType.INT64 || !Arrays.equals(y.shape(), new long[] {batchSize})) {
            throw new IllegalArgumentException("'target' in " + file + " is " + y.describe() + ", but --input needs int64["
                    + batchSize + "] (one class index per image)");
        }
        for (long label : y.toLongArray()) {
            if (label < 0 || label >= NUM_CLASSES) {
                throw new IllegalArgumentException("'target' in " + file + " holds the label " + label
                        + ", outside the model's classes [0, " + NUM_CLASSES + ")");
            }
        }
        return new Batch(x.keep(), y.keep());
    }

    /** One step as the anchors': zero_grad, forward, CrossEntropyLoss, backward, SGD step; returns the loss. */
    static float step(Module model, Optimizer optimizer, CrossEntropyLoss criterion, Batch batch) {
        return step(model, optimizer, criterion, batch, new Precision(AutocastChoice.none, AutocastChoice.none.scaler()));
    }

    /** --autocast: the choice and its scaler (enabled for float16 only). */
    record Precision(AutocastChoice autocast, GradScaler scaler) {}

    /** One step, forward and loss under Autocast when precision has a dtype, the loss scaled when its scaler is on. */
    static float step(Module model, Optimizer optimizer, CrossEntropyLoss criterion, Batch batch, Precision precision) {
        try (var scope = Tensors.scope()) {
            optimizer.zeroGrad();
            Tensor loss;
            try (var ac = precision.autocast().scope(batch.input().device())) {
                loss = criterion.forward(model.forward(batch.input()), batch.target());
            }
            precision.scaler().scale(loss).backward();
            precision.scaler().step(optimizer);
            precision.scaler().update();
            return loss.item();
        }
    }

    /** The sum of every parameter element, in double (the anchors' {@code param_sum}). */
    static double parameterSum(List<Tensor> parameters) {
        double sum = 0;
        for (Tensor p : parameters) {
            for (float v : p.toFloatArray()) {
                sum += v;
            }
        }
        return sum;
    }

    /** CRC-32 of the parameters' float32 little-endian bytes, one after the other (the anchors' {@code param_crc}). */
    static long parameterCrc(List<Tensor> parameters) {
        CRC32 crc = new CRC32();
        for (Tensor p : parameters) {
            float[] values = p.toFloatArray();
            ByteBuffer bytes = ByteBuffer.allocate(values.length * Float.BYTES).order(ByteOrder.LITTLE_ENDIAN);
            bytes.asFloatBuffer().put(values);
            crc.update(bytes);
        }
        return crc.getValue();
    }

    private static String formatMb(double mb) {
        return mb == Math.rint(mb) ? Long.toString((long) mb) : Double.toString(mb);
    }
}
