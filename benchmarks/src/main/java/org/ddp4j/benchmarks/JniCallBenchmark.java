package org.ddp4j.benchmarks;

import java.util.concurrent.TimeUnit;
import org.ddp4j.nn.Linear;
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
 * Cost of JNI crossings for small-tensor ops (issue 3's target: at most 1 µs per op): an in-place
 * add on 4 floats (one native call, no allocation), a 2→2 Linear forward without autograd
 * (allocates its output), and creating plus closing a 4-float tensor. Run:
 * {@code java -jar benchmarks/target/benchmarks.jar JniCall}.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
public class JniCallBenchmark {
    private static final float[] FOUR = {1, 2, 3, 4};

    private Tensor a;
    private Tensor b;
    private Linear linear;
    private Tensor input;

    @Setup
    public void setUp() {
        a = Tensor.of(new float[] {1, 2, 3, 4}, 4).keep();
        b = Tensor.of(new float[] {0, 0, 0, 0}, 4).keep();
        linear = new Linear(2, 2, true, new Generator(0));
        input = Tensor.of(new float[] {0.1f, 0.2f}, 1, 2).keep();
    }

    @TearDown
    public void tearDown() {
        a.close();
        b.close();
        input.close();
        linear.close();
    }

    /** One native call: a += 1 * b. */
    @Benchmark
    public Tensor addInPlaceSmall() {
        return a.addInPlace(b, 1f);
    }

    /** y = x W^T + b for a [1,2] input without autograd; the output is closed at once. */
    @Benchmark
    public float linearForwardNoGrad() {
        try (var noGrad = Tensors.noGrad(); Tensor y = linear.forward(input)) {
            return y.numel();
        }
    }

    /** A 4-float tensor from a Java array, then freed. */
    @Benchmark
    public long createAndClose() {
        try (Tensor t = Tensor.of(FOUR, 4)) {
            return t.numel();
        }
    }
}
