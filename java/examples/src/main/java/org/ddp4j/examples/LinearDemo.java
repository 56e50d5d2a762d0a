package org.ddp4j.examples;

import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.Callable;
import org.ddp4j.data.Batch;
import org.ddp4j.data.DataLoader;
import org.ddp4j.data.TensorDataset;
import org.ddp4j.distributed.environment.ClusterEnvironment;
import org.ddp4j.distributed.Distributed;
import org.ddp4j.nn.parallel.DistributedDataParallel;
import org.ddp4j.data.DistributedSampler;
import org.ddp4j.nn.Linear;
import org.ddp4j.nn.MSELoss;
import org.ddp4j.optim.SGD;
import org.ddp4j.tensor.Device;
import org.ddp4j.tensor.Generator;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;
import org.ddp4j.utils.TrainingPlot;
import org.ddp4j.internal.VersionProvider;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * The two-node linear-model demo (the job of the anchor's linear_demo.py): a 2→2 Linear under
 * DDP, four samples, DistributedSampler without shuffle, batch 1, MSELoss against per-rank random
 * labels, SGD lr 0.01. Start it with the launcher, e.g. {@code scripts/ddp4j-run --nproc-per-node 2
 * org.ddp4j.examples.LinearDemo}; {@code scripts/two-node-demo.sh} runs two nodes of 2 processes.
 */
@Command(name = "LinearDemo", mixinStandardHelpOptions = true, versionProvider = VersionProvider.class,
        description = "Two-node linear-model DDP demo (run under scripts/ddp4j-run).")
public final class LinearDemo implements Callable<Integer> {
    @Option(names = "--epochs", description = "Passes over the four samples (default: ${DEFAULT-VALUE}).")
    int epochs = 1;

    @Option(names = "--lr", description = "SGD learning rate (default: ${DEFAULT-VALUE}).")
    double lr = 0.01;

    @Option(names = "--plot", paramLabel = "FILE.png", description = "Rank 0 draws its training loss at every step into FILE.png.")
    Path plot;

    @Mixin
    DeviceOption deviceOption = new DeviceOption();

    public static void main(String[] args) {
        System.exit(DemoCommandLine.execute(new LinearDemo(), args));
    }

    @Override
    public Integer call() {
        Map<String, String> env = ClusterEnvironment.resolve(System.getenv()); // under srun: from SLURM
        String addr = env.getOrDefault("MASTER_ADDR", "?");
        String port = env.getOrDefault("MASTER_PORT", "?");
        Device device = deviceOption.resolve(env);
        TrainingPlot.checkPath(plot);
        Distributed.initProcessGroup(DeviceOption.backendFor(device));
        int rank = Distributed.getRank();
        int world = Distributed.getWorldSize();
        if (rank == 0) {
            System.out.println("MASTER_ADDR=" + addr + " MASTER_PORT=" + port);
        }
        System.out.println("| distributed init (rank " + rank + "): tcp://" + addr + ":" + port + ", "
                + DeviceOption.describe(device, env));

        Tensor data = Tensor.of(new float[] {0.1f, 0.1f, 0.2f, 0.2f, 0.3f, 0.3f, 0.4f, 0.4f}, 4, 2).keep();
        Tensor labels = Tensor.of(new Generator(1000 + rank).normal(2), 1, 2).keep();
        Tensor deviceLabels = labels.to(device).keep();
        System.out.println("data: " + data);
        System.out.println("labels: " + labels);

        DistributedSampler sampler = new DistributedSampler(4, world, rank, false, 0, false);
        DataLoader loader = new DataLoader(new TensorDataset(data), 1, sampler, false);
        Linear linear = new Linear(2, 2, true, new Generator(rank));
        linear.to(device);
        System.out.println("parameters before DDP: " + linear.namedParameters());
        DistributedDataParallel model = new DistributedDataParallel(linear);
        System.out.println("parameters after DDP: " + model.namedParameters());

        SGD optimizer = new SGD(model.parameters(), lr);
        MSELoss lossFn = new MSELoss();
        TrainingPlot curve = plot != null && rank == 0 ? new TrainingPlot("Linear demo, " + world + " rank(s)", "training loss (rank 0)") : null;
        long steps = 0;
        float lastLoss = Float.NaN;
        long start = System.nanoTime();
        for (int epoch = 0; epoch < epochs; epoch++) {
            sampler.setEpoch(epoch);
            int batchIndex = 0;
            for (Batch batch : loader) {
                try (batch; var scope = Tensors.scope()) {
                    if (epoch == 0) {
                        System.out.println("rank " + rank + " batch " + batchIndex + ": " + batch.inputs());
                    }
                    optimizer.zeroGrad();
                    Tensor loss = lossFn.forward(model.forward(batch.inputs().to(device)), deviceLabels);
                    loss.backward();
                    optimizer.step();
                    if (epoch == epochs - 1) {
                        lastLoss = loss.item();
                    }
                    if (curve != null) {
                        curve.addLoss(steps + 1, loss.item());
                    }
                }
                steps++;
                batchIndex++;
            }
        }
        double seconds = (System.nanoTime() - start) / 1e9;
        System.out.println("parameters after training: " + model.namedParameters());
        System.out.println(new Summary(rank, world, steps, seconds, 1, lastLoss).lineWithStepTime());
        if (curve != null) {
            curve.write(plot);
            System.out.println("Plot written to " + plot);
        }
        Distributed.destroyProcessGroup();
        return 0;
    }
}
