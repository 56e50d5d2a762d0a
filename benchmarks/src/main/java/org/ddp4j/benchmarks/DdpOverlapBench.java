package org.ddp4j.benchmarks;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.ddp4j.distributed.Distributed;
import org.ddp4j.nn.parallel.DistributedDataParallel;
import org.ddp4j.distributed.ProcessGroup;
import org.ddp4j.examples.ConvNet;
import org.ddp4j.nn.CrossEntropyLoss;
import org.ddp4j.optim.SGD;
import org.ddp4j.tensor.Generator;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;

/**
 * What DDP's overlap of gradient all-reduce with backward saves: ConvNet training steps (batch
 * 100 per rank, random images, SGD with momentum) under DDP, alternating blocks of steps with
 * overlap on and off in one run, so both see the same machine and load. Rank 0 prints the median
 * block's ms per step for each mode.
 *
 * <p>Run: {@code scripts/ddp4j-run --nproc-per-node 2 java -cp benchmarks/target/benchmarks.jar
 * org.ddp4j.benchmarks.DdpOverlapBench [bucketCapBytes] [blocks] [stepsPerBlock]}. The ConvNet's
 * gradients (116 kB) fit in DDP's 1 MB first bucket, so at the default cap there is one bucket,
 * ready only at the end of backward, and nothing to overlap; a small cap (e.g. 16384) splits them
 * into buckets that can go while backward continues.
 */
public final class DdpOverlapBench {
    private DdpOverlapBench() {}

    public static void main(String[] args) {
        long cap = args.length > 0 ? Long.parseLong(args[0]) : DistributedDataParallel.DEFAULT_BUCKET_CAP_BYTES;
        int blocks = args.length > 1 ? Integer.parseInt(args[1]) : 10;
        int stepsPerBlock = args.length > 2 ? Integer.parseInt(args[2]) : 10;
        int batch = 100;
        ProcessGroup group = Distributed.initProcessGroup("gloo");
        int rank = group.rank();
        DistributedDataParallel model = new DistributedDataParallel(new ConvNet(10, new Generator(0)), group, cap);
        SGD opt = new SGD(model.parameters(), 0.01, 0.9, 0, 0, false);
        CrossEntropyLoss ce = new CrossEntropyLoss();
        Generator g = new Generator(1 + rank);
        float[] images = g.uniform(batch * 28 * 28, 0f, 1f);
        long[] labels = new long[batch];
        for (int i = 0; i < batch; i++) {
            labels[i] = (i * 7 + rank) % 10;
        }
        Runnable step = () -> {
            try (var scope = Tensors.scope()) {
                opt.zeroGrad();
                Tensor x = Tensor.of(images, batch, 1, 28, 28);
                Tensor y = Tensor.ofLongs(labels, batch);
                ce.forward(model.forward(x), y).backward();
                opt.step();
            }
        };
        for (int i = 0; i < 5; i++) {
            step.run(); // warm-up, and the one-time bucket rebuild
        }
        List<Double> on = new ArrayList<>();
        List<Double> off = new ArrayList<>();
        for (int b = 0; b < 2 * blocks; b++) {
            boolean overlap = b % 2 == 0;
            model.setOverlap(overlap);
            group.barrier().await();
            long t0 = System.nanoTime();
            for (int i = 0; i < stepsPerBlock; i++) {
                step.run();
            }
            double msPerStep = (System.nanoTime() - t0) / 1e6 / stepsPerBlock;
            (overlap ? on : off).add(msPerStep);
        }
        if (rank == 0) {
            double mOn = median(on);
            double mOff = median(off);
            System.out.printf("DDP ConvNet, %d ranks, batch %d per rank, bucket cap %d B, buckets %s%n", group.size(),
                    batch, cap, model.bucketBytes());
            System.out.printf("overlap on : median %.2f ms/step (%.0f images/s per rank), blocks %s%n", mOn,
                    batch * 1000 / mOn, on);
            System.out.printf("overlap off: median %.2f ms/step (%.0f images/s per rank), blocks %s%n", mOff,
                    batch * 1000 / mOff, off);
            System.out.printf("overlap saves %.1f%% of the step%n", 100 * (mOff - mOn) / mOff);
        }
        opt.close();
        model.close();
        Distributed.destroyProcessGroup();
    }

    private static double median(List<Double> values) {
        double[] v = values.stream().mapToDouble(Double::doubleValue).toArray();
        Arrays.sort(v);
        return v.length % 2 == 1 ? v[v.length / 2] : (v[v.length / 2 - 1] + v[v.length / 2]) / 2;
    }
}
