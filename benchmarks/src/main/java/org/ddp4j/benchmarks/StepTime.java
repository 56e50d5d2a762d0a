package org.ddp4j.benchmarks;

import java.util.Arrays;
import java.util.Locale;
import org.ddp4j.examples.ConvNet;
import org.ddp4j.nn.CrossEntropyLoss;
import org.ddp4j.nn.functional.Functional;
import org.ddp4j.optim.SGD;
import org.ddp4j.tensor.Generator;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;

/**
 * A small harness for comparing kernel changes on a noisy shared machine: the best and median
 * time of a ConvNet training step (forward + backward + SGD, batch 100, this thread only), and
 * the best time of each op at the two-conv net's shapes. {@link ConvNetStepBenchmark} gives the
 * JMH figure with error bars; this gives a quick best-of-N.
 *
 * <p>Run: {@code java -cp benchmarks/target/benchmarks.jar org.ddp4j.benchmarks.StepTime [steps] [ops]}.
 */
public final class StepTime {
    private StepTime() {}

    /** Entry point: {@code [steps (default 200)] [ops]}. */
    public static void main(String[] args) {
        int steps = args.length > 0 ? Integer.parseInt(args[0]) : 200;
        boolean ops = args.length > 1 && args[1].equals("ops");
        Generator gen = new Generator(0);
        Tensor x = Tensor.of(gen.normal(100 * 28 * 28), 100, 1, 28, 28);
        long[] labels = new long[100];
        for (int i = 0; i < labels.length; i++) {
            labels[i] = i % 10;
        }
        Tensor y = Tensor.ofLongs(labels, 100);
        ConvNet model = new ConvNet(10, gen);
        SGD sgd = new SGD(model.parameters(), 0.01, 0.9, 0, 0, false);
        CrossEntropyLoss criterion = new CrossEntropyLoss();
        long[] t = new long[steps];
        for (int i = -20; i < steps; i++) {
            long t0 = System.nanoTime();
            try (var scope = Tensors.scope()) {
                Tensor loss = criterion.forward(model.forward(x), y);
                sgd.zeroGrad();
                loss.backward();
                sgd.step();
            }
            if (i >= 0) {
                t[i] = System.nanoTime() - t0;
            }
        }
        Arrays.sort(t);
        System.out.printf(Locale.ROOT, "ConvNet step (batch 100): best %.2f ms, median %.2f ms, %.0f images/s at best%n",
                t[0] / 1e6, t[steps / 2] / 1e6, 100 / (t[0] / 1e9));
        if (ops) {
            opTimes(gen, Math.max(20, steps / 4));
        }
    }

    private static void opTimes(Generator gen, int reps) {
        for (int[] s : new int[][] {{1, 16, 28}, {16, 32, 14}}) {
            int c = s[0], k = s[1], hw = s[2];
            Tensor in = Tensor.of(gen.normal(100 * c * hw * hw), 100, c, hw, hw).requiresGrad(c > 1);
            Tensor w = Tensor.of(gen.normal(k * c * 25), k, c, 5, 5).requiresGrad(true);
            Tensor b = Tensor.of(gen.normal(k), k).requiresGrad(true);
            Tensor g = Tensor.of(gen.normal(100 * k * hw * hw), 100, k, hw, hw);
            double flop = 2.0 * 100 * k * c * 25 * hw * hw;
            long fwd = Long.MAX_VALUE;
            long bwd = Long.MAX_VALUE;
            for (int i = 0; i < reps; i++) {
                try (var scope = Tensors.scope()) {
                    long t0 = System.nanoTime();
                    Tensor out = Functional.conv2d(in, w, b, 1, 2);
                    long t1 = System.nanoTime();
                    out.backward(g);
                    long t2 = System.nanoTime();
                    fwd = Math.min(fwd, t1 - t0);
                    bwd = Math.min(bwd, t2 - t1);
                    w.setGrad(null);
                    b.setGrad(null);
                    in.setGrad(null);
                }
            }
            double bflop = flop * (c > 1 ? 2 : 1);
            System.out.printf(Locale.ROOT, "conv %d->%d %dx%d: forward %.2f ms (%.1f GFLOP/s), backward %.2f ms (%.1f GFLOP/s)%n",
                    c, k, hw, hw, fwd / 1e6, flop / fwd, bwd / 1e6, bflop / bwd);
            Tensor gamma = Tensor.ones(k).requiresGrad(true);
            Tensor beta = Tensor.zeros(k).requiresGrad(true);
            Tensor rm = Tensor.zeros(k);
            Tensor rv = Tensor.ones(k);
            Tensor x2 = Tensor.of(gen.normal(100 * k * hw * hw), 100, k, hw, hw).requiresGrad(true);
            long[] best = {Long.MAX_VALUE, Long.MAX_VALUE, Long.MAX_VALUE, Long.MAX_VALUE, Long.MAX_VALUE, Long.MAX_VALUE};
            for (int i = 0; i < reps; i++) {
                try (var scope = Tensors.scope()) {
                    long t0 = System.nanoTime();
                    Tensor bn = Functional.batchNorm2d(x2, rm, rv, gamma, beta, true, 0.1, 1e-5);
                    long t1 = System.nanoTime();
                    Tensor r = Functional.relu(bn);
                    long t2 = System.nanoTime();
                    Tensor p = Functional.maxPool2d(r, 2, 2, 0);
                    long t3 = System.nanoTime();
                    p.backward(Tensor.ones(p.shape()));
                    long t4 = System.nanoTime();
                    best[0] = Math.min(best[0], t1 - t0);
                    best[1] = Math.min(best[1], t2 - t1);
                    best[2] = Math.min(best[2], t3 - t2);
                    best[3] = Math.min(best[3], t4 - t3);
                    x2.setGrad(null);
                    gamma.setGrad(null);
                    beta.setGrad(null);
                }
            }
            System.out.printf(Locale.ROOT, "  bn %.3f ms, relu %.3f ms, pool %.3f ms, pool+relu+bn backward %.3f ms%n",
                    best[0] / 1e6, best[1] / 1e6, best[2] / 1e6, best[3] / 1e6);
        }
    }
}
