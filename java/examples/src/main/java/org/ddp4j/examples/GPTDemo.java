package org.ddp4j.examples;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import org.ddp4j.amp.Autocast;
import org.ddp4j.data.Batch;
import org.ddp4j.data.TokenFile;
import org.ddp4j.data.TokenWindows;
import org.ddp4j.distributed.Distributed;
import org.ddp4j.distributed.ReduceOp;
import org.ddp4j.distributed.optim.ZeroRedundancyOptimizer;
import org.ddp4j.models.gpt2.GPT2Config;
import org.ddp4j.models.gpt2.GPT2LMHeadModel;
import org.ddp4j.models.gpt2.GPT2Pretrained;
import org.ddp4j.nn.parallel.DistributedDataParallel;
import org.ddp4j.nn.parallel.DistributedDataParallelOptions;
import org.ddp4j.nn.utils.ClipGradNorm;
import org.ddp4j.optim.AdamW;
import org.ddp4j.optim.CosineAnnealingLR;
import org.ddp4j.optim.LRScheduler;
import org.ddp4j.optim.LinearLR;
import org.ddp4j.optim.Optimizer;
import org.ddp4j.optim.SequentialLR;
import org.ddp4j.serialization.Checkpoint;
import org.ddp4j.tensor.Device;
import org.ddp4j.tensor.Generator;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;
import org.ddp4j.text.Tokenizer;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * nanoGPT's {@code train.py} in Java: a GPT-2 trained data-parallel on the token files that
 * {@link org.ddp4j.text.PrepareText} writes (nanoGPT's train.bin / val.bin). AdamW with weight
 * decay on matrices and embeddings only, linear warm-up then cosine decay, gradient clipping,
 * gradient accumulation under {@code noSync()}, bf16 autocast, validation loss every
 * {@code --eval-interval} steps (averaged over the ranks), a checkpoint that resumes exactly, and
 * a sample at the end. Each rank ends with
 * {@code summary rank=R world=W steps=S seconds=T tokens_per_s=X loss=L val_loss=V mfu=M
 * gemm_gflops=G peak_rss_mb=P parameters_crc32=C}: tokens per second of this rank, MFU its model FLOPs
 * (6·N + 12·n_layer·n_embd·T per token, N the parameters without the position table) over the
 * GEMM rate the same rank measured at start.
 */
@Command(name = "GPTDemo", mixinStandardHelpOptions = true,
        description = "Trains a GPT-2 on nanoGPT-style token files (run org.ddp4j.text.PrepareText first), data-parallel"
                + " over the launcher's ranks.")
public final class GPTDemo implements Callable<Integer> {
    @Option(names = "--data", required = true, paramLabel = "DIR",
            description = "Folder with train.bin, val.bin and meta.json from org.ddp4j.text.PrepareText.")
    Path data;

    @Option(names = "--init-from", paramLabel = "DIR",
            description = "Start from a Hugging Face GPT-2 folder (config.json, model.safetensors) instead of random weights.")
    Path initFrom;

    @Option(names = "--n-layer", description = "Transformer blocks (default: ${DEFAULT-VALUE}).")
    int nLayer = 4;

    @Option(names = "--n-head", description = "Attention heads (default: ${DEFAULT-VALUE}).")
    int nHead = 4;

    @Option(names = "--n-embd", description = "Model width (default: ${DEFAULT-VALUE}).")
    int nEmbd = 128;

    @Option(names = "--block-size", description = "Tokens per sequence, T (default: ${DEFAULT-VALUE}).")
    int blockSize = 64;

    @Option(names = "--batch-size", description = "Sequences per micro-batch and rank, B (default: ${DEFAULT-VALUE}).")
    int batchSize = 8;

    @Option(names = "--grad-accum", description = "Micro-batches per optimizer step (default: ${DEFAULT-VALUE}).")
    int gradAccum = 1;

    @Option(names = "--max-iters", description = "Optimizer steps in all (default: ${DEFAULT-VALUE}).")
    int maxIters = 200;

    @Option(names = "--lr", description = "Peak learning rate (default: ${DEFAULT-VALUE}).")
    double lr = 1e-3;

    @Option(names = "--min-lr", description = "Learning rate at the end of the cosine (default: ${DEFAULT-VALUE}).")
    double minLr = 1e-4;

    @Option(names = "--warmup-iters", description = "Steps of linear warm-up (default: ${DEFAULT-VALUE}).")
    int warmupIters = 20;

    @Option(names = "--weight-decay", description = "AdamW's decay on matrices and embeddings (default: ${DEFAULT-VALUE}).")
    double weightDecay = 0.1;

    @Option(names = "--beta2", description = "AdamW's beta2 (default: ${DEFAULT-VALUE}; beta1 is 0.9).")
    double beta2 = 0.95;

    @Option(names = "--grad-clip", description = "Clip the gradients' norm to this; 0 turns clipping off (default: ${DEFAULT-VALUE}).")
    double gradClip = 1.0;

    @Option(names = "--dropout", description = "All three GPT-2 dropouts (default: ${DEFAULT-VALUE}).")
    double dropout = 0.0;

    @Option(names = "--eval-interval", description = "Steps between validation losses (default: ${DEFAULT-VALUE}).")
    int evalInterval = 50;

    @Option(names = "--eval-iters", description = "Batches per validation loss, per rank (default: ${DEFAULT-VALUE}).")
    int evalIters = 10;

    @Option(names = "--log-interval", description = "Steps between loss lines on rank 0 (default: ${DEFAULT-VALUE}).")
    int logInterval = 10;

    @Option(names = "--autocast", description = "none or bf16: forward and loss under torch.autocast's rules (default: ${DEFAULT-VALUE}).")
    AutocastChoice autocast = AutocastChoice.none;

    @Option(names = "--seed", description = "Seeds the weights and every rank's batches (default: ${DEFAULT-VALUE}).")
    long seed = 1337;

    @Option(names = "--save", paramLabel = "FILE", description = "Rank 0 writes the train state here at every evaluation and at the end (atomically).")
    Path save;

    @Option(names = "--resume", paramLabel = "FILE", description = "Continue a run saved with --save, with the same options: the steps after it are those of an uninterrupted run.")
    Path resume;

    @Option(names = "--stop-after", paramLabel = "N",
            description = "Train only N steps in this run (of the --max-iters schedule), save (--save) and stop: a job in a"
                    + " time-limited slot; --resume continues it.")
    Integer stopAfter;

    /**
     * What each rank keeps whole: everything (DDP alone), all but the optimizer state (ZeRO stage 1), or
     * nothing (fully_shard: parameters, gradients and optimizer state in shards).
     */
    enum Shard { none, zero1, full }

    @Option(names = "--shard", description = "none: every rank keeps AdamW's state; zero1: each rank keeps its share"
            + " (ZeroRedundancyOptimizer); full: fully_shard each block and the model, so each rank keeps its share of"
            + " the parameters, gradients and state (default: ${DEFAULT-VALUE}).")
    Shard shard = Shard.none;

    @Option(names = "--bucket-cap-mb", description = "DDP's gradient bucket size in MiB, PyTorch's bucket_cap_mb (default: ${DEFAULT-VALUE}).")
    double bucketCapMb = 25;

    @Option(names = "--sample-tokens", description = "Tokens rank 0 samples at the end (default: ${DEFAULT-VALUE}; 0: none).")
    int sampleTokens = 100;

    @Option(names = "--temperature", description = "Sampling temperature (default: ${DEFAULT-VALUE}).")
    double temperature = 0.8;

    @Option(names = "--top-k", description = "Sample among the k likeliest tokens (default: ${DEFAULT-VALUE}; 0: all).")
    int topK = 200;

    public static void main(String[] args) {
        System.exit(DemoCommandLine.execute(new GPTDemo(), args));
    }

    @Override
    public Integer call() throws IOException {
        checkOptions();
        JsonNode meta = readMeta();
        Tokenizer tokenizer = Tokenizer.byName(meta.path("tokenizer").asText());
        TokenFile train = TokenFile.open(data.resolve("train.bin"));
        TokenFile val = TokenFile.open(data.resolve("val.bin"));
        GPT2Config config = initFrom != null ? GPT2Pretrained.readConfig(initFrom.resolve(GPT2Pretrained.CONFIG)).withDropout(dropout)
                : new GPT2Config(tokenizer.vocabSize(), blockSize, nEmbd, nLayer, nHead, 4 * nEmbd, dropout, dropout, dropout,
                        1e-5, 0.02);
        if (blockSize > config.nPositions()) {
            throw new IllegalArgumentException("--block-size " + blockSize + " exceeds the model's n_positions "
                    + config.nPositions() + ": lower --block-size");
        }
        Distributed.initProcessGroup("gloo");
        int rank = Distributed.getRank();
        int world = Distributed.getWorldSize();

        Generator generator = new Generator(seed); // the weights (rank 0's are broadcast), then dropout's masks
        GPT2LMHeadModel net = initFrom != null ? loadPretrained(config, generator) : new GPT2LMHeadModel(config, generator);
        ParallelModel model = shard == Shard.full ? ParallelModel.fullyShard(net, net.transformer().h())
                : ParallelModel.ddp(net, new DistributedDataParallel(net,
                        DistributedDataParallelOptions.defaults().bucketCapMb(bucketCapMb)));
        // The initialisation's Java arrays (a whole embedding's values at a time) are garbage now: a
        // full collection lets the heap shrink before training needs the memory.
        System.gc();
        AdamW.Options adamW = AdamW.Options.defaults().lr(lr).betas(0.9, beta2);
        List<Map<String, Object>> groups = GPT2LMHeadModel.parameterGroups(model.trainedParameters(), weightDecay);
        Optimizer optimizer = shard == Shard.zero1
                ? new ZeroRedundancyOptimizer(groups, g -> new AdamW(g, adamW), Distributed.defaultGroup())
                : new AdamW(groups, adamW);
        LRScheduler schedule = warmupThenCosine(optimizer);
        TokenWindows trainBatches = new TokenWindows(train, blockSize, batchSize, seed, rank);
        int firstIter = 0;
        if (resume != null) {
            firstIter = restore(net, optimizer, schedule, trainBatches);
            if (rank == 0) {
                System.out.println("Resumed from " + resume + " at step " + firstIter);
            }
        }
        long nonPositionParameters = net.parameters().stream().mapToLong(Tensor::numel).sum()
                - net.transformer().wpe().weight().numel();
        double flopsPerToken = 6.0 * nonPositionParameters + 12.0 * config.nLayer() * config.nEmbd() * blockSize;
        double gemmGflops = measureGemmGflops();
        if (rank == 0) {
            System.out.printf(Locale.ROOT, "GPT-2: %d layers, %d heads, width %d, block %d, vocabulary %d (%s), %.2fM"
                    + " parameters; %d rank(s) x %d sequences x %d micro-batches; autocast %s%n", config.nLayer(),
                    config.nHead(), config.nEmbd(), blockSize, config.vocabSize(), tokenizer.name(),
                    nonPositionParameters / 1e6, world, batchSize, gradAccum, autocast.describe());
        }

        float lastLoss = Float.NaN;
        double lastVal = Double.NaN;
        long tokensPerStep = (long) batchSize * blockSize * gradAccum;
        int lastIter = stopAfter == null ? maxIters : Math.min(maxIters, firstIter + stopAfter);
        long start = System.nanoTime();
        long intervalStart = start;
        int intervalFirst = firstIter;
        for (int iter = firstIter; iter < lastIter; iter++) {
            if (iter % evalInterval == 0 && iter > firstIter) {
                lastVal = validationLoss(model, net, val);
                consolidateForSave(optimizer);
                if (rank == 0) {
                    System.out.printf(Locale.ROOT, "step %d: val loss %.4f%n", iter, lastVal);
                    if (save != null) {
                        save(net, optimizer, schedule, trainBatches, iter);
                    }
                }
            }
            // Dropout's masks: each rank its own (nanoGPT seeds 1337 + rank), a function of the step so a
            // resumed run draws what an uninterrupted one would (the model's generator, once the
            // weights are drawn, serves dropout only)
            generator.manualSeed(seed + 1_000_003L * (iter + 1) + 7919L * rank);
            try (var scope = Tensors.scope()) {
                optimizer.zeroGrad();
                float loss = 0;
                for (int micro = 0; micro < gradAccum; micro++) {
                    try (Batch batch = trainBatches.next();
                            var sync = micro < gradAccum - 1 ? model.noSync() : null) {
                        Tensor microLoss;
                        try (var ac = autocast.scope(Device.CPU)) {
                            // nanoGPT's model(x, y): the head fused with the loss, no [B·T, vocab] logits
                            microLoss = model.call(() -> net.loss(batch.inputs(), batch.labels())).div(gradAccum);
                        }
                        microLoss.backward();
                        loss += microLoss.item();
                    }
                }
                if (gradClip > 0) {
                    ClipGradNorm.clipGradNorm(model.trainedParameters(), gradClip);
                }
                optimizer.step();
                schedule.step();
                lastLoss = loss;
            }
            if (rank == 0 && ((iter + 1) % logInterval == 0 || iter + 1 == lastIter)) {
                long now = System.nanoTime();
                int steps = iter + 1 - intervalFirst;
                double seconds = (now - intervalStart) / 1e9;
                double tokensPerSecond = steps * tokensPerStep / seconds;
                System.out.printf(Locale.ROOT, "iter %d: loss %.4f, lr %.2e, %.0f ms/step, %.0f tokens/s, mfu %.1f%%%n",
                        iter + 1, lastLoss, optimizer.paramGroups().get(0).lr(), seconds * 1e3 / steps, tokensPerSecond,
                        100 * tokensPerSecond * flopsPerToken / (gemmGflops * 1e9));
                intervalStart = now;
                intervalFirst = iter + 1;
            }
        }
        double seconds = (System.nanoTime() - start) / 1e9;
        lastVal = validationLoss(model, net, val);
        consolidateForSave(optimizer);
        if (rank == 0) {
            System.out.printf(Locale.ROOT, "step %d: val loss %.4f%n", lastIter, lastVal);
            if (save != null) {
                save(net, optimizer, schedule, trainBatches, lastIter);
                System.out.println("Saved the train state to " + save);
            }
        }
        double peakRssMiB = PeakMemory.residentMiB();
        // The digest reads every parameter and rank 0 samples alone: no collective may run inside.
        model.gatherAll();
        long steps = lastIter - firstIter;
        double tokensPerSecond = seconds > 0 ? steps * tokensPerStep / seconds : 0;
        System.out.printf(Locale.ROOT, "summary rank=%d world=%d steps=%d seconds=%.3f tokens_per_s=%.1f loss=%.6f"
                + " val_loss=%.6f mfu=%.4f gemm_gflops=%.1f peak_rss_mb=%.1f parameters_crc32=%s%n", rank, world, steps,
                seconds, tokensPerSecond, lastLoss, lastVal, tokensPerSecond * flopsPerToken / (gemmGflops * 1e9),
                gemmGflops, peakRssMiB, StateDigest.of(net));
        if (rank == 0 && sampleTokens > 0) {
            System.out.println("sample:");
            System.out.println(sample(net, tokenizer));
        }
        model.close();
        Distributed.destroyProcessGroup();
        return 0;
    }

    private void checkOptions() {
        for (Object[] o : new Object[][] {{"--n-layer", nLayer}, {"--n-head", nHead}, {"--n-embd", nEmbd},
                {"--block-size", blockSize}, {"--batch-size", batchSize}, {"--grad-accum", gradAccum},
                {"--max-iters", maxIters}, {"--eval-interval", evalInterval}, {"--eval-iters", evalIters},
                {"--log-interval", logInterval}}) {
            if ((int) o[1] <= 0) {
                throw new IllegalArgumentException(o[0] + " must be positive, got " + o[1]);
            }
        }
        if (warmupIters < 0 || warmupIters >= maxIters) {
            throw new IllegalArgumentException("--warmup-iters must lie in [0, --max-iters), got " + warmupIters
                    + " with --max-iters " + maxIters);
        }
        if (!(lr > 0) || !(minLr >= 0) || minLr > lr) {
            throw new IllegalArgumentException("need 0 <= --min-lr <= --lr and --lr > 0, got --lr " + lr + ", --min-lr " + minLr);
        }
        if (stopAfter != null && (stopAfter <= 0 || save == null)) {
            throw new IllegalArgumentException("--stop-after needs a positive step count and --save FILE to continue from");
        }
        if (shard == Shard.full && (save != null || resume != null)) {
            throw new IllegalArgumentException("--shard full does not write or read --save/--resume train states (each"
                    + " rank holds a shard: ShardedCheckpoint saves them in a program of your own); use --shard zero1 or none"
                    + " to save");
        }
        if (autocast == AutocastChoice.fp16) {
            throw new IllegalArgumentException("--autocast fp16 needs a GradScaler this demo does not run; use bf16 (as"
                    + " nanoGPT does on CPUs and recent GPUs) or none");
        }
    }

    private JsonNode readMeta() {
        Path file = data.resolve("meta.json");
        if (!Files.isRegularFile(file) || !Files.isRegularFile(data.resolve("train.bin"))
                || !Files.isRegularFile(data.resolve("val.bin"))) {
            throw new IllegalArgumentException(data + " lacks train.bin, val.bin or meta.json: write them first with"
                    + " java -cp ddp4j.jar org.ddp4j.text.PrepareText --out " + data + " (Debian's fortunes by default)");
        }
        try {
            return new ObjectMapper().readTree(file.toFile());
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + file + ": " + e.getMessage(), e);
        }
    }

    private GPT2LMHeadModel loadPretrained(GPT2Config config, Generator generator) {
        GPT2LMHeadModel pretrained = GPT2LMHeadModel.fromPretrained(initFrom);
        GPT2LMHeadModel model = new GPT2LMHeadModel(config, generator); // with this run's dropout
        model.loadStateDict(pretrained.stateDict());
        pretrained.close();
        return model;
    }

    /** Linear warm-up from lr / 100, then cosine down to --min-lr: nanoGPT's get_lr as PyTorch schedulers. */
    private LRScheduler warmupThenCosine(Optimizer optimizer) {
        if (warmupIters == 0) {
            return new CosineAnnealingLR(optimizer, maxIters, minLr);
        }
        return new SequentialLR(optimizer, List.of(new LinearLR(optimizer, 0.01, 1.0, warmupIters),
                new CosineAnnealingLR(optimizer, maxIters - warmupIters, minLr)), new int[] {warmupIters});
    }

    /**
     * Mean loss over --eval-iters validation batches on every rank, averaged over the ranks (each
     * rank draws its own windows, the same ones at every evaluation, so the figures compare).
     */
    private double validationLoss(ParallelModel model, GPT2LMHeadModel net, TokenFile val) {
        TokenWindows windows = new TokenWindows(val, blockSize, batchSize, seed + 1, Distributed.getRank());
        boolean wasTraining = net.isTraining();
        net.eval();
        double sum = 0;
        try (var noGrad = Tensors.noGrad()) {
            for (int i = 0; i < evalIters; i++) {
                try (Batch batch = windows.next(); var scope = Tensors.scope(); var ac = autocast.scope(Device.CPU)) {
                    sum += model.evaluate(() -> net.loss(batch.inputs(), batch.labels())).item();
                }
            }
        }
        net.train(wasTraining);
        try (var scope = Tensors.scope()) {
            Tensor mean = Tensor.of(new float[] {(float) (sum / evalIters)}, 1);
            Distributed.allReduce(mean, ReduceOp.AVG);
            return mean.item();
        }
    }

    /** FLOP/s of one [512, 512] x [512, 512] product on this rank's threads, best of 5 after a warm-up. */
    private static double measureGemmGflops() {
        try (var scope = Tensors.scope(); var noGrad = Tensors.noGrad()) {
            Generator g = new Generator(0);
            Tensor a = Tensor.of(g.normal(512 * 512), 512, 512);
            Tensor b = Tensor.of(g.normal(512 * 512), 512, 512);
            a.matmul(b);
            long best = Long.MAX_VALUE;
            for (int i = 0; i < 5; i++) {
                long t0 = System.nanoTime();
                a.matmul(b).close();
                best = Math.min(best, System.nanoTime() - t0);
            }
            return 2.0 * 512 * 512 * 512 / best;
        }
    }

    private String sample(GPT2LMHeadModel net, Tokenizer tokenizer) {
        long start = tokenizer.eotToken() >= 0 ? tokenizer.eotToken() : '\n';
        try (var scope = Tensors.scope()) {
            long[] ids = net.generate(Tensor.ofLongs(new long[] {start}, 1, 1), sampleTokens, temperature, topK,
                    new Generator(seed + 2)).toLongArray();
            int[] out = new int[ids.length - 1];
            for (int i = 1; i < ids.length; i++) {
                out[i - 1] = (int) ids[i];
            }
            return tokenizer.decode(out);
        }
    }

    /** Under ZeRO, gathers the optimizer state on rank 0 (every rank calls it) before rank 0 saves. */
    private void consolidateForSave(Optimizer optimizer) {
        if (save != null && optimizer instanceof ZeroRedundancyOptimizer zero) {
            zero.consolidateStateDict(0);
        }
    }

    private void save(GPT2LMHeadModel net, Optimizer optimizer, LRScheduler schedule, TokenWindows batches,
            int iter) {
        new Checkpoint().put("model", net).put("optimizer", optimizer).put("scheduler", schedule)
                .put("data", new WindowsState(batches)).put("iter", iter).save(save);
    }

    private int restore(GPT2LMHeadModel net, Optimizer optimizer, LRScheduler schedule, TokenWindows batches) {
        Checkpoint c = Checkpoint.load(resume);
        for (String key : new String[] {"model", "optimizer", "scheduler", "data", "iter"}) {
            if (!c.has(key)) {
                throw new IllegalArgumentException(resume + " has no '" + key + "' entry: it is not a train state written"
                        + " by GPTDemo --save (it has " + c.keys() + ")");
            }
        }
        try (var scope = Tensors.scope()) {
            c.restore("model", net);
            c.restore("optimizer", optimizer);
        }
        c.restore("scheduler", schedule);
        c.restore("data", new WindowsState(batches));
        return c.getInt("iter");
    }

    /** The training windows' position (a step counter) as a checkpoint entry. */
    private record WindowsState(TokenWindows windows) implements Checkpoint.Stateful {
        @Override
        public Map<String, Tensor> stateTensors() {
            return Map.of();
        }

        @Override
        public Map<String, Object> stateValues() {
            return windows.stateDict();
        }

        @Override
        public void loadState(Map<String, Tensor> tensors, Map<String, Object> values) {
            windows.loadStateDict(values);
        }
    }
}
