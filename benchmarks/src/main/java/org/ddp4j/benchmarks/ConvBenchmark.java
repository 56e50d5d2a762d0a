package org.ddp4j.benchmarks;

import java.util.concurrent.TimeUnit;
import org.ddp4j.internal.ConvNatives;
import org.ddp4j.internal.NativeResults;
import org.ddp4j.internal.TensorHandles;
import org.ddp4j.internal.TensorNatives;
import org.ddp4j.tensor.Generator;
import org.ddp4j.tensor.Tensor;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * CPU Conv2d throughput at torchvision ResNet shapes, batch 32 at 224x224, in GFLOP/s: each
 * benchmark is one training step of one layer (forward with bias, then the backward computing
 * the input, weight and bias gradients: 3 x 2·N·K·C·R·S·P·Q FLOPs). A step's FLOPs do not fit
 * JMH's int operation count, so operations are MFLOP and the time unit milliseconds: the score
 * (MFLOP per ms) <em>is</em> GFLOP/s. Output allocation and JNI are included, as a training step
 * pays them. Shapes:
 *
 * <ul>
 *   <li>{@code conv1Stem7x7s2}: ResNet stem: 7x7 stride 2 pad 3, 3→64, 224→112 (22.7 GFLOP)
 *   <li>{@code layer1Conv3x3}: ResNet-18 layer1: 3x3, 64→64 at 56x56 (22.2 GFLOP)
 *   <li>{@code layer2Conv3x3s2}: ResNet-18 layer2's first conv: 3x3 stride 2, 64→128, 56→28 (11.1 GFLOP)
 *   <li>{@code layer3Conv3x3}: ResNet-18 layer3: 3x3, 256→256 at 14x14 (22.2 GFLOP)
 *   <li>{@code layer4Conv3x3}: ResNet-18 layer4: 3x3, 512→512 at 7x7 (22.2 GFLOP)
 *   <li>{@code bottleneckExpand1x1}: ResNet-50 layer1 bottleneck: 1x1, 64→256 at 56x56 (9.9 GFLOP)
 *   <li>{@code downsample1x1s2}: ResNet-50 layer2 downsample: 1x1 stride 2, 256→512, 56→28 (19.7 GFLOP)
 *   <li>{@code bottleneckReduce1x1}: ResNet-50 layer3 bottleneck: 1x1, 1024→256 at 14x14 (9.9 GFLOP)
 * </ul>
 *
 * <p>Run: {@code java -jar benchmarks/target/benchmarks.jar ConvBenchmark}; the intra-op thread
 * count is ddp4j's default. Compare with {@code KernelBenchmark.gemm512} (the machine's GEMM rate).
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
@Warmup(iterations = 2, time = 2)
@Measurement(iterations = 3, time = 2)
@Fork(1)
public class ConvBenchmark {
    private static final int BATCH = 32;

    /** One layer's tensors: input, weight, bias and an output gradient. */
    private static final class Conv implements AutoCloseable {
        final Tensor x;
        final Tensor w;
        final Tensor b;
        final Tensor gy;
        final int stride;
        final int padding;

        Conv(Generator g, int in, int out, int size, int kernel, int stride, int padding) {
            int p = (size + 2 * padding - kernel) / stride + 1;
            this.x = randn(g, BATCH, in, size, size);
            this.w = randn(g, out, in, kernel, kernel);
            this.b = randn(g, out);
            this.gy = randn(g, BATCH, out, p, p);
            this.stride = stride;
            this.padding = padding;
        }

        /** Forward, then input, weight and bias gradients; frees every output. */
        void step() {
            free(ConvNatives.conv2dForward(TensorHandles.nativeHandle(x), TensorHandles.nativeHandle(w), TensorHandles.nativeHandle(b), stride, stride, padding,
                    padding, 1, 1, 1, 0, NativeResults.buffer()));
            long[] r = NativeResults.buffer();
            ConvNatives.conv2dBackward(TensorHandles.nativeHandle(gy), TensorHandles.nativeHandle(x), TensorHandles.nativeHandle(w), true, true, stride, stride,
                    padding, padding, 1, 1, 1, 0, r);
            for (int slot = 0; slot < 3; slot++) {
                free(r[slot * NativeResults.SLOT]);
            }
        }

        @Override
        public void close() {
            for (Tensor t : new Tensor[] {x, w, b, gy}) {
                t.close();
            }
        }
    }

    private Conv conv1Stem7x7s2;
    private Conv layer1Conv3x3;
    private Conv layer2Conv3x3s2;
    private Conv layer3Conv3x3;
    private Conv layer4Conv3x3;
    private Conv bottleneckExpand1x1;
    private Conv downsample1x1s2;
    private Conv bottleneckReduce1x1;

    @Setup
    public void setUp() {
        Generator g = new Generator(0);
        conv1Stem7x7s2 = new Conv(g, 3, 64, 224, 7, 2, 3);
        layer1Conv3x3 = new Conv(g, 64, 64, 56, 3, 1, 1);
        layer2Conv3x3s2 = new Conv(g, 64, 128, 56, 3, 2, 1);
        layer3Conv3x3 = new Conv(g, 256, 256, 14, 3, 1, 1);
        layer4Conv3x3 = new Conv(g, 512, 512, 7, 3, 1, 1);
        bottleneckExpand1x1 = new Conv(g, 64, 256, 56, 1, 1, 0);
        downsample1x1s2 = new Conv(g, 256, 512, 56, 1, 2, 0);
        bottleneckReduce1x1 = new Conv(g, 1024, 256, 14, 1, 1, 0);
    }

    @TearDown
    public void tearDown() {
        for (Conv c : new Conv[] {conv1Stem7x7s2, layer1Conv3x3, layer2Conv3x3s2, layer3Conv3x3, layer4Conv3x3, bottleneckExpand1x1, downsample1x1s2, bottleneckReduce1x1}) {
            c.close();
        }
    }

    private static Tensor randn(Generator g, long... shape) {
        long n = 1;
        for (long d : shape) {
            n *= d;
        }
        return Tensor.of(g.normal((int) n), shape);
    }

    private static void free(long handle) {
        if (handle != 0) {
            TensorNatives.free(handle);
        }
    }

    /** ResNet stem: 7x7 stride 2 pad 3, 3→64, 224→112: 22.66 GFLOP per step. */
    @Benchmark
    @OperationsPerInvocation(22659)
    public void conv1Stem7x7s2() {
        conv1Stem7x7s2.step();
    }

    /** ResNet-18 layer1: 3x3, 64→64 at 56x56: 22.20 GFLOP per step. */
    @Benchmark
    @OperationsPerInvocation(22196)
    public void layer1Conv3x3() {
        layer1Conv3x3.step();
    }

    /** ResNet-18 layer2's first conv: 3x3 stride 2, 64→128, 56→28: 11.10 GFLOP per step. */
    @Benchmark
    @OperationsPerInvocation(11098)
    public void layer2Conv3x3s2() {
        layer2Conv3x3s2.step();
    }

    /** ResNet-18 layer3: 3x3, 256→256 at 14x14: 22.20 GFLOP per step. */
    @Benchmark
    @OperationsPerInvocation(22196)
    public void layer3Conv3x3() {
        layer3Conv3x3.step();
    }

    /** ResNet-18 layer4: 3x3, 512→512 at 7x7: 22.20 GFLOP per step. */
    @Benchmark
    @OperationsPerInvocation(22196)
    public void layer4Conv3x3() {
        layer4Conv3x3.step();
    }

    /** ResNet-50 layer1 bottleneck: 1x1, 64→256 at 56x56: 9.87 GFLOP per step. */
    @Benchmark
    @OperationsPerInvocation(9865)
    public void bottleneckExpand1x1() {
        bottleneckExpand1x1.step();
    }

    /** ResNet-50 layer2 downsample: 1x1 stride 2, 256→512, 56→28: 19.73 GFLOP per step. */
    @Benchmark
    @OperationsPerInvocation(19730)
    public void downsample1x1s2() {
        downsample1x1s2.step();
    }

    /** ResNet-50 layer3 bottleneck: 1x1, 1024→256 at 14x14: 9.87 GFLOP per step. */
    @Benchmark
    @OperationsPerInvocation(9865)
    public void bottleneckReduce1x1() {
        bottleneckReduce1x1.step();
    }
}
