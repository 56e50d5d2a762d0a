package org.ddp4j.examples;

import java.util.Locale;
import org.ddp4j.data.Batch;
import org.ddp4j.data.DataLoader;
import org.ddp4j.data.MnistDataset;
import org.ddp4j.distributed.Distributed;
import org.ddp4j.distributed.DistributedSampler;
import org.ddp4j.nn.CrossEntropyLoss;
import org.ddp4j.nn.parallel.DistributedDataParallel;
import org.ddp4j.optim.SGD;
import org.ddp4j.tensor.Device;
import org.ddp4j.tensor.Generator;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;

/**
 * A measurement, not a test: the ConvNet demo's training (Fashion-MNIST, batch 100 per rank, SGD
 * lr 0.05 momentum 0.9, shuffled DistributedSampler, seed 0) for EPOCHS epochs under a
 * communication hook, then rank 0's test accuracy. Run as the ranks of a job (env://):
 * {@code java -cp ... org.ddp4j.examples.ConvNetCommHookAccuracyMain none|allreduce|bf16|fp16|powersgd[:RANK] EPOCHS START_ITER}
 * (START_ITER: PowerSGD's start_powerSGD_iter). Prints "accuracy hook=H test_accuracy=A seconds=S".
 */
public final class ConvNetCommHookAccuracyMain {
    private ConvNetCommHookAccuracyMain() {}

    public static void main(String[] args) {
        String hookName = args[0];
        int epochs = Integer.parseInt(args[1]);
        long startIter = Long.parseLong(args[2]);
        MnistDataset train = new FashionMnistOption().train();
        MnistDataset test = new FashionMnistOption().test();
        Distributed.initProcessGroup("gloo");
        int rank = Distributed.getRank();
        int world = Distributed.getWorldSize();
        DistributedSampler sampler = new DistributedSampler(train.size(), world, rank, true, 0, false);
        DataLoader loader = new DataLoader(train, 100, sampler, false);
        DistributedDataParallel model = new DistributedDataParallel(new ConvNet(10, 0, new Generator(0)));
        if (!hookName.equals("none")) {
            CommHookChoice.parse(hookName).register(model, model.processGroup(), startIter);
        }
        CrossEntropyLoss criterion = new CrossEntropyLoss();
        SGD optimizer = new SGD(model.parameters(), 0.05, 0.9, 0, 0, false);
        long start = System.nanoTime();
        for (int epoch = 0; epoch < epochs; epoch++) {
            sampler.setEpoch(epoch);
            for (Batch batch : loader) {
                try (batch; var scope = Tensors.scope()) {
                    Tensor loss = criterion.forward(model.forward(batch.inputs()), batch.labels());
                    optimizer.zeroGrad();
                    loss.backward();
                    optimizer.step();
                }
            }
        }
        double seconds = (System.nanoTime() - start) / 1e9;
        if (rank == 0) {
            double accuracy = ConvNetDemo.testAccuracy(model, test, 1000, Device.CPU);
            System.out.printf(Locale.ROOT, "accuracy hook=%s test_accuracy=%.4f seconds=%.1f%n", hookName, accuracy,
                    seconds);
        }
        Distributed.barrier();
        Distributed.destroyProcessGroup();
    }
}
