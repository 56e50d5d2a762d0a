package org.ddp4j.benchmarks;

import java.util.concurrent.TimeUnit;
import org.ddp4j.tensor.Tensor;
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
 * Cost of one JNI crossing for a small-tensor op: an in-place add on 4 floats (dispatch, checks
 * and kernel included, no allocation). Run: {@code java -jar benchmarks/target/benchmarks.jar JniCall}.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
public class JniCallBenchmark {
    private Tensor a;
    private Tensor b;

    @Setup
    public void setUp() {
        a = Tensor.of(new float[] {1, 2, 3, 4}, 4);
        b = Tensor.of(new float[] {0, 0, 0, 0}, 4);
    }

    @TearDown
    public void tearDown() {
        a.close();
        b.close();
    }

    /** One native call: a += 1 * b. */
    @Benchmark
    public Tensor addInPlaceSmall() {
        return a.addInPlace(b, 1f);
    }
}
