package org.ddp4j.amp;

import java.util.Objects;
import org.ddp4j.internal.AmpNatives;
import org.ddp4j.tensor.DType;
import org.ddp4j.tensor.Device;
import org.ddp4j.tensor.Tensor;

/**
 * A scope of automatic mixed precision, as {@code torch.autocast(device_type, dtype)}: inside it,
 * conv2d and linear (forward and, through the mode their autograd nodes record at forward time,
 * backward) multiply in {@link DType#BFLOAT16} or {@link DType#FLOAT16} with float32
 * accumulation; every other op (batch norm, ReLU, pooling, losses, softmax, reductions) runs in
 * float32, as PyTorch's CPU and CUDA op lists keep them. Parameters, gradients and optimizer state
 * stay float32 (master weights).
 *
 * <pre>{@code
 * try (var ac = Autocast.enable(Device.CPU, DType.BFLOAT16)) {
 *     Tensor loss = lossFn.apply(model.forward(x), y);
 * }
 * loss.backward();   // backward outside the scope, as PyTorch recommends: the nodes remember
 * }</pre>
 *
 * <p><b>Where ddp4j differs from PyTorch.</b> PyTorch's autocast casts the inputs and weights of a
 * conv or linear to bf16/fp16 and returns a bf16/fp16 tensor. ddp4j rounds the operands to the low
 * dtype inside the GEMM (while its packing copies them anyway) and returns the float32 accumulator
 * itself, not rounded: the same products, one rounding fewer, and the next op (batch norm, ReLU,
 * loss) needs no low-precision kernel. Results stay within PyTorch's autocast tolerances of its
 * results (AutocastGoldenTest); unlike PyTorch, activations are not halved in memory. The
 * backward rounds the incoming gradient and the saved input and weight the same way; the input
 * gradient is float32 too (PyTorch's is bf16 until its cast back).
 *
 * <p><b>CPU kernels.</b> bfloat16 GEMMs multiply with {@code vdpbf16ps} (AVX512-BF16: two
 * products per float32 lane per instruction) where the CPU has it, else they round the operands,
 * widen them back to float32 and run the float32 GEMM ({@link #cpuKernel()};
 * {@code DDP4J_CPU_BF16_KERNEL=widen} forces the latter). Float16 always takes the widening
 * kernel (no AVX512-FP16 on these CPUs). The two bfloat16 kernels round the same way and differ
 * only in the order of the float32 sums (and vdpbf16ps reads subnormals as zero). On CUDA the ops
 * layer rounds the operands and the float32 kernels multiply them.
 *
 * <p>State is per thread (a rank is a process; its training thread is the one that matters) and
 * per device type; scopes nest and must be closed in reverse order on the thread that opened them.
 * Low-precision inputs (a tensor already bfloat16) are accepted by conv2d and linear inside a scope
 * and widened (differentiably); outside one they are refused as before.
 */
public final class Autocast implements AutoCloseable {
    private static final ThreadLocal<Autocast[]> CURRENT =
            ThreadLocal.withInitial(() -> new Autocast[Device.Type.values().length]);

    private final Device.Type deviceType;
    private final DType dtype;
    private final boolean enabled;
    private final Autocast previous;
    private final Thread owner;
    private boolean closed;

    private Autocast(Device.Type deviceType, DType dtype, boolean enabled, Autocast previous) {
        this.deviceType = deviceType;
        this.dtype = dtype;
        this.enabled = enabled;
        this.previous = previous;
        this.owner = Thread.currentThread();
    }

    /**
     * Opens an enabled scope: {@code torch.autocast(device.type, dtype)}.
     *
     * @see #enable(Device, DType, boolean)
     */
    public static Autocast enable(Device device, DType dtype) {
        return enable(device, dtype, true);
    }

    /**
     * Opens a scope on this thread for tensors on {@code device}'s type (every CUDA device when it is
     * a GPU): {@code torch.autocast(device_type, dtype, enabled)}. {@code enabled = false} turns
     * autocast off inside an enclosing scope (float32 again) until this one closes.
     *
     * @param device {@link Device#CPU} or a CUDA device (the ordinal does not matter)
     * @param dtype {@link DType#BFLOAT16} or {@link DType#FLOAT16}
     * @return the scope; {@link #close()} restores the state before it
     * @throws IllegalArgumentException if dtype is another dtype (the message names the allowed ones)
     */
    public static Autocast enable(Device device, DType dtype, boolean enabled) {
        Objects.requireNonNull(device, "Autocast: device is null");
        Objects.requireNonNull(dtype, "Autocast: dtype is null");
        if (dtype != DType.BFLOAT16 && dtype != DType.FLOAT16) {
            throw new IllegalArgumentException("Autocast: dtype must be DType.BFLOAT16 or DType.FLOAT16 (torch.bfloat16,"
                    + " torch.float16), got DType." + dtype + "; to run in float32, do not open a scope or pass enabled=false");
        }
        Autocast[] current = CURRENT.get();
        int slot = device.type().ordinal();
        Autocast scope = new Autocast(device.type(), dtype, enabled, current[slot]);
        current[slot] = scope;
        return scope;
    }

    /**
     * Whether autocast is on for {@code device}'s type on this thread: {@code torch.is_autocast_enabled}
     * (CUDA) / {@code torch.is_autocast_cpu_enabled}.
     */
    public static boolean isEnabled(Device device) {
        Autocast scope = CURRENT.get()[device.type().ordinal()];
        return scope != null && scope.enabled;
    }

    /**
     * The dtype conv2d and linear multiply in on {@code device} now: the innermost enabled scope's,
     * {@link DType#FLOAT32} when none is (as {@code torch.get_autocast_cpu_dtype} when enabled).
     */
    public static DType computeDtype(Device device) {
        Autocast scope = CURRENT.get()[device.type().ordinal()];
        return scope != null && scope.enabled ? scope.dtype : DType.FLOAT32;
    }

    /**
     * {@code t} as float32 for an autocast op: {@code t} itself when it is float32 (or null), else
     * {@code t.to(DType.FLOAT32)}, differentiable. Ops call it only while {@link #computeDtype} is low.
     */
    public static Tensor widen(Tensor t) {
        return t == null || t.dtype() == DType.FLOAT32 ? t : t.to(DType.FLOAT32);
    }

    /** Which CPU kernel bfloat16 GEMMs take: {@link CpuKernel#AVX512_BF16} or {@link CpuKernel#WIDEN}. */
    public static CpuKernel cpuKernel() {
        return CpuKernel.ofNativeName(AmpNatives.cpuKernel());
    }

    /** This scope's dtype. */
    public DType dtype() {
        return dtype;
    }

    /** Whether this scope turns autocast on (false: off inside an enclosing scope). */
    public boolean enabled() {
        return enabled;
    }

    /**
     * Restores the state before this scope. Idempotent.
     *
     * @throws IllegalStateException if called on another thread, or while a scope opened inside this
     *     one is still open (scopes close in reverse order, as try-with-resources closes them)
     */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        if (Thread.currentThread() != owner) {
            throw new IllegalStateException("Autocast: a scope must be closed on the thread that opened it ("
                    + owner.getName() + "), not on " + Thread.currentThread().getName());
        }
        Autocast[] current = CURRENT.get();
        int slot = deviceType.ordinal();
        if (current[slot] != this) {
            throw new IllegalStateException("Autocast: close the inner scope first (scopes close in reverse order;"
                    + " use try-with-resources)");
        }
        current[slot] = previous;
        closed = true;
    }

    @Override
    public String toString() {
        return "Autocast(device_type=" + deviceType.name().toLowerCase() + ", dtype=torch." + dtype.name().toLowerCase()
                + ", enabled=" + enabled + ")";
    }

    /** The CPU kernel of autocast's bfloat16 GEMMs (float16 always widens). */
    public enum CpuKernel {
        /** {@code vdpbf16ps} on bfloat16 pairs packed from the operands (AVX512-BF16). */
        AVX512_BF16("avx512bf16"),
        /** Operands rounded to bfloat16, widened back, float32 GEMM: any x86-64 CPU. */
        WIDEN("widen");

        private final String nativeName;

        CpuKernel(String nativeName) {
            this.nativeName = nativeName;
        }

        /** The name {@code DDP4J_CPU_BF16_KERNEL} takes: "avx512bf16" or "widen". */
        public String settingValue() {
            return nativeName;
        }

        static CpuKernel ofNativeName(String name) {
            for (CpuKernel k : values()) {
                if (k.nativeName.equals(name)) {
                    return k;
                }
            }
            throw new IllegalStateException("Autocast: unknown CPU kernel " + name);
        }
    }
}
