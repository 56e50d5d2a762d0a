package org.ddp4j.benchmarks;

import java.util.concurrent.TimeUnit;
import org.ddp4j.cuda.Cuda;
import org.ddp4j.internal.ConvNatives;
import org.ddp4j.internal.LinearNatives;
import org.ddp4j.internal.NativeResults;
import org.ddp4j.internal.TensorHandles;
import org.ddp4j.internal.TensorNatives;
import org.ddp4j.tensor.DType;
import org.ddp4j.tensor.Device;
import org.ddp4j.tensor.Generator;
import org.ddp4j.tensor.Tensor;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * Kernel throughput in GFLOP/s: each benchmark declares its floating-point operations per call
 * as JMH operations and reports operations per nanosecond, so the score <em>is</em> GFLOP/s
 * (multiply-add = 2 FLOPs; output allocation, dispatch and JNI included, as a training step
 * pays them). Shapes are the two-conv net's at batch 100, plus a square 512 GEMM:
 *
 * <ul>
 *   <li>{@code linear1568x10*}: Linear 1568→10, x [100, 1568] (3.14 MFLOP forward, 6.27 backward);
 *   <li>{@code gemm512}: Linear 512→512 at batch 512 without bias, one 512³ GEMM (268 MFLOP);
 *       {@code gemm512Bf16} the same under autocast bfloat16;
 *   <li>{@code conv1*}: Conv 1→16 5x5 pad 2 on [100, 1, 28, 28] (62.7 MFLOP forward; backward
 *       computes the weight and bias gradients only, as in the net, whose input needs no gradient);
 *   <li>{@code conv2*}: Conv 16→32 5x5 pad 2 on [100, 16, 14, 14] (502 MFLOP forward, 1004 MFLOP
 *       backward: input and weight gradients).
 * </ul>
 *
 * <p>Run: {@code java -jar benchmarks/target/benchmarks.jar Kernel}; on a GPU add {@code -p device=cuda}
 * (kernels are queued asynchronously; the host blocks once CUDA's launch queue is full, so the
 * score is the GPU's rate, and each iteration ends with a synchronisation so that no queued work
 * spills into the next). The BLAS kernel OpenBLAS
 * picked matters for the GEMM rows (see {@code OPENBLAS_CORETYPE}); the stride-1 convolutions
 * use ddp4j's own AVX-512 kernels where the CPU has them ({@code DDP4J_CONV_DIRECT=0} measures
 * the im2col + GEMM path).
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 2, time = 1)
@Measurement(iterations = 3, time = 1)
@Fork(1)
public class KernelBenchmark {
    private static final int BATCH = 100;

    /** cpu, or cuda (cuda:0). */
    @Param({"cpu"})
    public String device;

    private Device target;

    private Tensor fcX;
    private Tensor fcW;
    private Tensor fcB;
    private Tensor fcGy;
    private Tensor sqX;
    private Tensor sqW;
    private Tensor c1X;
    private Tensor c1W;
    private Tensor c1B;
    private Tensor c1Gy;
    private Tensor c2X;
    private Tensor c2W;
    private Tensor c2B;
    private Tensor c2Gy;

    @Setup
    public void setUp() {
        target = Device.parse(device);
        Generator g = new Generator(0);
        fcX = randn(g, BATCH, 1568);
        fcW = randn(g, 10, 1568);
        fcB = randn(g, 10);
        fcGy = randn(g, BATCH, 10);
        sqX = randn(g, 512, 512);
        sqW = randn(g, 512, 512);
        c1X = randn(g, BATCH, 1, 28, 28);
        c1W = randn(g, 16, 1, 5, 5);
        c1B = randn(g, 16);
        c1Gy = randn(g, BATCH, 16, 28, 28);
        c2X = randn(g, BATCH, 16, 14, 14);
        c2W = randn(g, 32, 16, 5, 5);
        c2B = randn(g, 32);
        c2Gy = randn(g, BATCH, 32, 14, 14);
    }

    @TearDown(Level.Iteration)
    public void drainQueuedWork() {
        if (target.isCuda()) {
            Cuda.synchronize(target);
        }
    }

    @TearDown
    public void tearDown() {
        for (Tensor t : new Tensor[] {fcX, fcW, fcB, fcGy, sqX, sqW, c1X, c1W, c1B, c1Gy, c2X, c2W, c2B, c2Gy}) {
            t.close();
        }
    }

    private Tensor randn(Generator g, long... shape) {
        long n = 1;
        for (long d : shape) {
            n *= d;
        }
        Tensor host = Tensor.of(g.normal((int) n), shape);
        if (!target.isCuda()) {
            return host;
        }
        try (host) {
            return host.to(target);
        }
    }

    private static void free(long handle) {
        if (handle != 0) {
            TensorNatives.free(handle);
        }
    }

    /** Frees the outputs a multi-output native left in the results buffer (3 slots at most here). */
    private static void freeResults() {
        long[] results = NativeResults.buffer();
        for (int slot = 0; slot < 3; slot++) {
            free(results[slot * NativeResults.SLOT]);
        }
    }

    /** y = x·wᵀ + b, Linear 1568→10 at batch 100. */
    @Benchmark
    @OperationsPerInvocation(2 * BATCH * 1568 * 10)
    public void linear1568x10Forward() {
        free(LinearNatives.linearForward(TensorHandles.nativeHandle(fcX), TensorHandles.nativeHandle(fcW), TensorHandles.nativeHandle(fcB), 0, NativeResults.buffer()));
    }

    /** gx = gy·w, gw = gyᵀ·x, gb = Σ gy. */
    @Benchmark
    @OperationsPerInvocation(2 * 2 * BATCH * 1568 * 10)
    public void linear1568x10Backward() {
        LinearNatives.linearBackward(TensorHandles.nativeHandle(fcGy), TensorHandles.nativeHandle(fcX), TensorHandles.nativeHandle(fcW), true, true, 0, NativeResults.buffer());
        freeResults();
    }

    /** One 512x512x512 sgemm through the Linear op. */
    @Benchmark
    @OperationsPerInvocation(2 * 512 * 512 * 512)
    public void gemm512() {
        free(LinearNatives.linearForward(TensorHandles.nativeHandle(sqX), TensorHandles.nativeHandle(sqW), 0, 0, NativeResults.buffer()));
    }

    /**
     * The same GEMM as autocast runs it (torch.autocast bfloat16): operands rounded to bfloat16 while
     * packed, float32 accumulation; vdpbf16ps where the CPU has AVX512-BF16, else the widening kernel
     * ({@code DDP4J_CPU_BF16_KERNEL=widen} measures that one). Read against {@link #gemm512}.
     */
    @Benchmark
    @OperationsPerInvocation(2 * 512 * 512 * 512)
    public void gemm512Bf16() {
        free(LinearNatives.linearForward(TensorHandles.nativeHandle(sqX), TensorHandles.nativeHandle(sqW), 0, DType.BFLOAT16.ordinal(),
                NativeResults.buffer()));
    }

    @Benchmark
    @OperationsPerInvocation(2 * BATCH * 16 * 25 * 28 * 28)
    public void conv1Forward() {
        free(ConvNatives.conv2dForward(TensorHandles.nativeHandle(c1X), TensorHandles.nativeHandle(c1W), TensorHandles.nativeHandle(c1B), 1, 1, 2, 2, 1, 1, 1, 0, NativeResults.buffer()));
    }

    @Benchmark
    @OperationsPerInvocation(2 * BATCH * 16 * 25 * 28 * 28)
    public void conv1BackwardWeight() {
        ConvNatives.conv2dBackward(TensorHandles.nativeHandle(c1Gy), TensorHandles.nativeHandle(c1X), TensorHandles.nativeHandle(c1W), false, true,
                1, 1, 2, 2, 1, 1, 1, 0, NativeResults.buffer());
        freeResults();
    }

    @Benchmark
    @OperationsPerInvocation(2 * BATCH * 32 * 16 * 25 * 14 * 14)
    public void conv2Forward() {
        free(ConvNatives.conv2dForward(TensorHandles.nativeHandle(c2X), TensorHandles.nativeHandle(c2W), TensorHandles.nativeHandle(c2B), 1, 1, 2, 2, 1, 1, 1, 0, NativeResults.buffer()));
    }

    @Benchmark
    @OperationsPerInvocation(2 * 2 * BATCH * 32 * 16 * 25 * 14 * 14)
    public void conv2Backward() {
        ConvNatives.conv2dBackward(TensorHandles.nativeHandle(c2Gy), TensorHandles.nativeHandle(c2X), TensorHandles.nativeHandle(c2W), true, true,
                1, 1, 2, 2, 1, 1, 1, 0, NativeResults.buffer());
        freeResults();
    }
}
