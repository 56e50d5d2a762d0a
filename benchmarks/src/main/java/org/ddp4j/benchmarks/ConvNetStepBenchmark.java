package org.ddp4j.benchmarks;

import java.util.concurrent.TimeUnit;
import org.ddp4j.examples.ConvNet;
import org.ddp4j.nn.CrossEntropyLoss;
import org.ddp4j.optim.SGD;
import org.ddp4j.tensor.Generator;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * One training step of the Fashion-MNIST demo's two-conv network in one process: forward,
 * cross-entropy, backward and SGD (momentum 0.9) on a fixed batch of 100 random images, with the
 * step's tensors freed by a scope as in {@code ConvNetDemo}. PyTorch's step (benchmarks/pytorch/convnet_mnist.py's model) at one
 * thread is about 22.5 ms on the reference machine (4400 images/s); images/s = 100 / score.
 * Run: {@code java -jar benchmarks/target/benchmarks.jar ConvNetStep}.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
@Warmup(iterations = 2, time = 2)
@Measurement(iterations = 3, time = 2)
@Fork(1)
public class ConvNetStepBenchmark {
    private ConvNet model;
    private SGD optimizer;
    private final CrossEntropyLoss criterion = new CrossEntropyLoss();
    private Tensor images;
    private Tensor labels;

    @Setup
    public void setUp() {
        Generator g = new Generator(0);
        model = new ConvNet(10, g);
        optimizer = new SGD(model.parameters(), 0.01, 0.9, 0, 0, false);
        images = Tensor.of(g.normal(100 * 28 * 28), 100, 1, 28, 28);
        long[] y = new long[100];
        for (int i = 0; i < y.length; i++) {
            y[i] = i % 10;
        }
        labels = Tensor.ofLongs(y, 100);
    }

    @TearDown
    public void tearDown() {
        images.close();
        labels.close();
        optimizer.close();
        model.close();
    }

    /** Forward + backward + SGD step, batch 100. */
    @Benchmark
    public float trainStep() {
        try (var scope = Tensors.scope()) {
            Tensor loss = criterion.forward(model.forward(images), labels);
            optimizer.zeroGrad();
            loss.backward();
            optimizer.step();
            return loss.item();
        }
    }
}
