package org.ddp4j.tensor;

import java.lang.ref.Cleaner;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.function.Consumer;
import java.util.function.LongSupplier;
import org.ddp4j.internal.ElementwiseNatives;
import org.ddp4j.internal.NativeResults;
import org.ddp4j.internal.TensorHandles;
import org.ddp4j.internal.TensorNatives;

/**
 * An n-dimensional array in native memory (contiguous, row-major), with autograd: PyTorch's
 * {@code torch.Tensor}.
 *
 * <p>A tensor owns a native handle. Free it with {@link #close()}, or create it inside a
 * {@link Tensors#scope()} that frees everything it created; a {@link Cleaner} frees forgotten
 * tensors eventually, as a backstop only. Any op on a closed tensor throws
 * {@link IllegalStateException}. Tensors are not thread-safe.
 */
public final class Tensor implements AutoCloseable {
    private static final Cleaner CLEANER = Cleaner.create();

    /**
     * The native handle, freed by close() or by the Cleaner (once: then closed). A recomputable
     * tensor's storage may also be freed by release() and restored later, while not closed.
     */
    private static final class Handle implements Runnable {
        private long value;
        private boolean closed;

        Handle(long value) {
            this.value = value;
        }

        @Override
        public synchronized void run() {
            closed = true;
            release();
        }

        /** Frees the storage, leaving the handle open for restore(). */
        synchronized void release() {
            long h = value;
            value = 0;
            if (h != 0) {
                TensorNatives.free(h);
            }
        }

        /** Points an open, released handle at recomputed storage; frees it instead when closed meanwhile. */
        synchronized boolean restore(long recomputed) {
            if (closed || value != 0) {
                TensorNatives.free(recomputed);
                return false;
            }
            value = recomputed;
            return true;
        }

        synchronized long get() {
            return value;
        }

        synchronized boolean isClosed() {
            return closed;
        }

        /** Points at a new native tensor and frees the old one. */
        synchronized void replace(long newValue) {
            long old = value;
            value = newValue;
            if (old != 0) {
                TensorNatives.free(old);
            }
        }
    }

    private final Handle handle;
    private final Cleaner.Cleanable cleanable;
    private final long[] shape;
    private final DType dtype;
    private Device device;
    private final long numel;

    TensorScope scope;
    private boolean requiresGrad;
    private Tensor grad;
    /** Whether autograd allocated grad (then this tensor frees it in clearGrad), rather than setGrad's caller. */
    private boolean gradOwned;
    private Node gradFn;
    private List<Consumer<Tensor>> postAccumulateGradHooks;
    /** Computes this tensor's values again (a native handle), or null: see {@link #recomputableBy}. */
    private LongSupplier recompute;
    /** Whether the model {@link #release() released} this tensor (its backward may then free it). */
    private boolean released;
    /** Whether {@link #backwardDone} closed it (for the message when it is read again). */
    private boolean freedAfterBackward;

    private static final DType[] DTYPES = DType.values();

    static { // the JNI bindings in other packages reach the handle methods through org.ddp4j.internal
        TensorHandles.install(new TensorHandles.Access() {
            @Override
            public long nativeHandle(Tensor t) {
                return t.nativeHandle();
            }

            @Override
            public Tensor fromNativeHandle(long handle) {
                return Tensor.fromNativeHandle(handle);
            }

            @Override
            public Tensor fromNativeResult(long handle) {
                return Tensor.fromNativeResult(handle);
            }

            @Override
            public Tensor fromNativeResult(long[] results, int slot) {
                return Tensor.fromNativeResult(results, slot);
            }
        });
    }

    private Tensor(long nativeHandle, DType dtype, Device device, long[] shape, boolean tracked) {
        this.handle = new Handle(nativeHandle);
        this.cleanable = CLEANER.register(this, handle);
        this.dtype = dtype;
        this.device = device;
        this.shape = shape;
        long n = 1;
        for (long s : shape) {
            n *= s;
        }
        this.numel = n;
        if (tracked) {
            TensorScope current = TensorScope.current();
            if (current != null) {
                current.register(this);
            }
        }
    }

    /** Wraps a handle whose metadata is asked for in a second crossing ({@code meta}). */
    private static Tensor withMeta(long nativeHandle, boolean tracked) {
        long[] meta = TensorNatives.meta(nativeHandle);
        return new Tensor(nativeHandle, DTYPES[(int) meta[0]], device(meta[1], meta[2]),
                Arrays.copyOfRange(meta, 3, meta.length), tracked);
    }

    private static Device device(long type, long index) {
        return type == 0 ? Device.CPU : Device.cuda((int) index);
    }

    /** Wraps slot {@code slot} of a results buffer a native has just filled; null for handle 0. */
    private static Tensor ofResult(long[] results, int slot, boolean tracked) {
        int base = slot * NativeResults.SLOT;
        long h = results[base];
        if (h == 0) {
            return null;
        }
        int ndim = (int) results[base + 4];
        if (ndim > NativeResults.MAX_DIMS) {
            return withMeta(h, tracked); // the slot had no room for the sizes
        }
        int sizes = base + NativeResults.HEADER;
        return new Tensor(h, DTYPES[(int) results[base + 1]], device(results[base + 2], results[base + 3]),
                Arrays.copyOfRange(results, sizes, sizes + ndim), tracked);
    }

    /**
     * Wraps a handle returned by a ddp4j native call; the tensor now owns it and joins the current
     * scope. For ddp4j's own JNI bindings whose natives do not fill a results buffer (this costs a
     * second crossing for the metadata; prefer {@link #fromNativeResult}).
     */
    static Tensor fromNativeHandle(long nativeHandle) {
        if (nativeHandle == 0) {
            throw new IllegalArgumentException("null native tensor handle");
        }
        return withMeta(nativeHandle, true);
    }

    /**
     * Wraps the single output of a native that has just filled slot 0 of this thread's
     * {@link NativeResults#buffer()} and returned {@code nativeHandle}; the tensor owns it and joins
     * the current scope. For ddp4j's own JNI bindings: no second crossing for the metadata.
     *
     * @throws IllegalArgumentException if nativeHandle is 0
     * @throws IllegalStateException if slot 0 does not hold nativeHandle (the native did not fill it)
     */
    static Tensor fromNativeResult(long nativeHandle) {
        long[] results = NativeResults.buffer();
        if (nativeHandle == 0) {
            throw new IllegalArgumentException("null native tensor handle");
        }
        if (results[0] != nativeHandle) {
            throw new IllegalStateException("the results buffer does not hold handle " + nativeHandle);
        }
        return ofResult(results, 0, true);
    }

    /**
     * Wraps output {@code slot} of a native that has just filled {@code results} (see
     * {@link NativeResults}); null where that output's handle is 0 (not requested). Joins the
     * current scope. For ddp4j's own JNI bindings of multi-output ops.
     */
    static Tensor fromNativeResult(long[] results, int slot) {
        return ofResult(results, slot, true);
    }

    /** Like {@link #fromNativeResult(long)} but outside any scope: for parameters, gradients, buffers. */
    static Tensor fromNativeResultUntracked(long nativeHandle) {
        Tensor t = ofResult(NativeResults.buffer(), 0, false);
        if (t == null || t.handle.get() != nativeHandle) {
            throw new IllegalStateException("the results buffer does not hold handle " + nativeHandle);
        }
        return t;
    }

    // ---- creation ---------------------------------------------------------------------------------

    /**
     * A float32 CPU tensor holding {@code data} (copied) in row-major order. Mirrors {@code torch.tensor}.
     *
     * @throws IllegalArgumentException if data.length differs from the product of shape
     */
    public static Tensor of(float[] data, long... shape) {
        checkLength(data.length, shape);
        return fromNativeResult(TensorNatives.fromFloats(data, 0, shape, NativeResults.buffer()));
    }

    /** A float32 CPU tensor from {@code shape}-many values of {@code data} starting at {@code offset}. */
    public static Tensor ofRegion(float[] data, int offset, long... shape) {
        return fromNativeResult(TensorNatives.fromFloats(data, offset, shape, NativeResults.buffer()));
    }

    /**
     * An int64 CPU tensor holding {@code data} (copied), e.g. class labels.
     *
     * @throws IllegalArgumentException if data.length differs from the product of shape
     */
    public static Tensor ofLongs(long[] data, long... shape) {
        checkLength(data.length, shape);
        return fromNativeResult(TensorNatives.fromLongs(data, 0, shape, NativeResults.buffer()));
    }

    /**
     * A bfloat16 or float16 CPU tensor whose elements have the given bit patterns (copied), in
     * row-major order: bfloat16's are float32's upper 16 bits, float16's IEEE binary16. Mirrors
     * {@code torch.tensor(bits, dtype=torch.int16).view(dtype)}. To make one from values, convert a
     * float32 tensor: {@code Tensor.of(values, shape).to(DType.BFLOAT16)}.
     *
     * @throws IllegalArgumentException if dtype is not BFLOAT16 or FLOAT16, or bits.length differs
     *     from the product of shape
     */
    public static Tensor ofBits(short[] bits, DType dtype, long... shape) {
        checkLength(bits.length, shape);
        return fromNativeResult(TensorNatives.fromBits(bits, 0, shape, dtype.ordinal(), NativeResults.buffer()));
    }

    /** A float32 scalar (shape []). */
    public static Tensor scalar(float value) {
        return of(new float[] {value});
    }

    /** A float32 CPU tensor of zeros. Mirrors {@code torch.zeros}. */
    public static Tensor zeros(long... shape) {
        return full(0, DType.FLOAT32, Device.CPU, shape);
    }

    /** A CPU tensor of zeros of the given dtype. Mirrors {@code torch.zeros(*shape, dtype=dtype)}. */
    public static Tensor zeros(DType dtype, long... shape) {
        return full(0, dtype, Device.CPU, shape);
    }

    /** A CPU tensor of ones of the given dtype. Mirrors {@code torch.ones(*shape, dtype=dtype)}. */
    public static Tensor ones(DType dtype, long... shape) {
        return full(1, dtype, Device.CPU, shape);
    }

    /** A float32 CPU tensor of ones. Mirrors {@code torch.ones}. */
    public static Tensor ones(long... shape) {
        return full(1, DType.FLOAT32, Device.CPU, shape);
    }

    /**
     * A tensor of {@code value} with the given dtype and device. Mirrors {@code torch.full}: for
     * bfloat16 and float16 the value is rounded to float32, then to nearest even in the 16-bit type
     * (65520 and above become inf in float16).
     *
     * @throws IllegalArgumentException for bfloat16 or float16 on a GPU (not supported yet: create it
     *     on the CPU and move it with {@link #to(Device)})
     */
    public static Tensor full(double value, DType dtype, Device device, long... shape) {
        Devices.require(device);
        return fromNativeResult(TensorNatives.full(shape, dtype.ordinal(), device.type().ordinal(), device.index(), value, NativeResults.buffer()));
    }

    /** A zero tensor with this tensor's shape, dtype and device. Mirrors {@code torch.zeros_like}. */
    public Tensor zerosLike() {
        return full(0, dtype, device, shape);
    }

    private static void checkLength(int length, long[] shape) {
        long n = 1;
        for (long s : shape) {
            n *= s;
        }
        if (n != length) {
            throw new IllegalArgumentException(length + " values cannot fill shape " + Arrays.toString(shape)
                    + " (" + n + " elements)");
        }
    }

    // ---- metadata ---------------------------------------------------------------------------------

    /**
     * The native handle, for ddp4j's JNI bindings (outside this package through
     * {@link org.ddp4j.internal.TensorHandles}).
     *
     * @throws IllegalStateException if this tensor is closed
     */
    long nativeHandle() {
        long h = handle.get();
        if (h == 0 && recompute != null && !handle.isClosed()) {
            long recomputed = recompute.getAsLong();
            if (recomputed != 0) {
                handle.restore(recomputed);
            }
            h = handle.get();
        }
        if (h == 0 && freedAfterBackward) {
            throw new IllegalStateException("tensor " + describe() + " was freed after the backward that last read it "
                    + "(the model released it with Tensor.release()): run the forward again before another backward "
                    + "through the same graph, or do not release it");
        }
        if (h == 0) {
            throw new IllegalStateException("tensor " + describe() + " is closed: it was freed by close() or by the "
                    + "Tensors.scope() that created it; create tensors you need after the scope outside it, or keep() them");
        }
        return h;
    }

    /** Sizes of each dimension (a copy). Mirrors {@code Tensor.shape}. */
    public long[] shape() {
        return shape.clone();
    }

    /** Size of dimension d (negative counts from the end). Mirrors {@code Tensor.size(d)}. */
    public long size(int d) {
        int i = d < 0 ? d + shape.length : d;
        if (i < 0 || i >= shape.length) {
            throw new IllegalArgumentException("dimension " + d + " out of range for shape " + Arrays.toString(shape));
        }
        return shape[i];
    }

    public int dim() {
        return shape.length;
    }

    public long numel() {
        return numel;
    }

    public DType dtype() {
        return dtype;
    }

    public Device device() {
        return device;
    }

    /** Whether {@link #close()} (or the scope that created it) has freed this tensor. */
    public boolean isClosed() {
        return handle.isClosed() || (handle.get() == 0 && recompute == null);
    }

    /** "float32[2, 3] on cpu". */
    public String describe() {
        return dtype.name().toLowerCase() + Arrays.toString(shape) + " on " + device;
    }

    // ---- lifetime ---------------------------------------------------------------------------------

    /** Frees the native memory now (idempotent). Its gradient is not closed. */
    @Override
    public void close() {
        cleanable.clean();
    }

    /**
     * Declares how to compute this tensor's values again, bit for bit, from tensors that stay alive
     * anyway (for an op's output: the inputs its backward keeps), so that {@link #release()} may
     * free the storage at once. For op implementations (ddp4j's batch norms use it); the supplier
     * returns a new native handle of this tensor's shape, dtype and device, or 0 when it has given
     * this tensor storage itself ({@link #allocateStorage()}, as fully_shard's all-gather does).
     * Returns this.
     */
    public Tensor recomputableBy(LongSupplier recompute) {
        this.recompute = Objects.requireNonNull(recompute, "recomputableBy: recompute is null");
        return this;
    }

    /** Whether {@link #recomputableBy} gave this tensor a way to compute its values again. */
    public boolean isRecomputable() {
        return recompute != null;
    }

    /**
     * Declares that the forward is done with this intermediate result, so its memory can go before
     * the step's scope closes. A {@link #recomputableBy recomputable} tensor (the output of a
     * training-mode batch norm, with or without the ReLU, on the CPU) is freed now and stays
     * usable: the next op that reads it (typically a backward that saved it) recomputes the same
     * bits, and its producer's backward frees them again. Any other tensor keeps its storage until
     * the backward of the ddp4j op that is its last reader has run ({@link #backwardDone}: the
     * batch norms for their input, which is what a convolution's output is kept for), then it is
     * freed; release only tensors that no other op reads in the backward, and run the backward
     * once per forward. ResNet's blocks release every batch norm's input and output, which leaves
     * a step holding little besides the convolution outputs until their batch norm's backward.
     * No PyTorch counterpart (there the last reference going away frees a tensor; activation
     * checkpointing, {@code torch.utils.checkpoint}, recomputes whole segments).
     *
     * @return whether the storage was freed now (false when it is kept until a backward, was
     *     released already, or is closed)
     */
    public boolean release() {
        if (released || handle.isClosed() || handle.get() == 0) {
            return false;
        }
        released = true;
        if (recompute == null) {
            return false;
        }
        handle.release();
        return true;
    }

    /**
     * For op implementations: the backward of an op that read this tensor, when it is the
     * tensor's last reader in the backward (a batch norm for its input, an op for its own
     * recomputable output), calls this once done. Frees the storage if the model
     * {@link #release() released} the tensor: a recomputable one can still be recomputed, any
     * other is closed for good. Does nothing otherwise.
     */
    public void backwardDone() {
        if (!released || handle.isClosed()) {
            return;
        }
        if (recompute != null) {
            handle.release();
        } else {
            freedAfterBackward = true;
            close();
        }
    }

    /**
     * Frees this tensor's storage and keeps the tensor: shape, dtype, gradient and the places that
     * hold it (a module, the autograd graph) stay. The next read calls the {@link #recomputableBy}
     * supplier, which must give it storage again. Mirrors {@code untyped_storage().resize_(0)},
     * how FSDP frees a parameter between its uses; fully_shard uses it.
     *
     * @throws IllegalStateException if the tensor has no supplier to restore it (it would read as closed)
     */
    public void freeStorage() {
        if (recompute == null) {
            throw new IllegalStateException("freeStorage(): " + describe() + " has no recomputableBy supplier to give it "
                    + "storage again; close() it instead");
        }
        handle.release();
    }

    /**
     * Gives a tensor whose storage {@link #freeStorage() was freed} new storage of its shape and
     * dtype, values undefined (the caller writes them). Mirrors
     * {@code untyped_storage().resize_(nbytes)}. Does nothing when it has storage.
     *
     * @throws IllegalStateException if the tensor is closed
     */
    public void allocateStorage() {
        if (handle.isClosed()) {
            throw new IllegalStateException("allocateStorage(): " + describe() + " is closed");
        }
        if (handle.get() == 0) {
            handle.restore(TensorNatives.empty(shape, dtype.ordinal(), device.type().ordinal(), device.index(),
                    NativeResults.buffer()));
        }
    }

    /** Whether the tensor holds storage now (false after {@link #freeStorage()} or {@link #close()}). */
    public boolean hasStorage() {
        return handle.get() != 0;
    }

    /** Takes this tensor out of the scope that created it, so it outlives the scope. Returns this. */
    public Tensor keep() {
        scope = null;
        return this;
    }

    // ---- data -------------------------------------------------------------------------------------

    /**
     * The values, copied to a Java array: float32 as they are, bfloat16 and float16 widened to
     * float32 (exactly). Mirrors {@code tensor.float().tolist()}; a GPU tensor is copied to the host.
     *
     * @throws IllegalArgumentException for an int64 tensor (use {@link #toLongArray()})
     */
    public float[] toFloatArray() {
        float[] out = new float[Math.toIntExact(numel)];
        TensorNatives.toFloats(nativeHandle(), out);
        return out;
    }

    /**
     * The bit patterns of a bfloat16 or float16 tensor, copied to a Java array (see
     * {@link #ofBits}). Mirrors {@code tensor.view(torch.int16).tolist()}.
     *
     * @throws IllegalArgumentException for float32 and int64 tensors
     */
    public short[] toBitsArray() {
        short[] out = new short[Math.toIntExact(numel)];
        TensorNatives.toBits(nativeHandle(), out);
        return out;
    }

    /**
     * The values of a {@link DType#BOOL} tensor, copied to a Java array. Mirrors {@code tensor.tolist()}.
     *
     * @throws IllegalArgumentException for other dtypes
     */
    public boolean[] toBooleanArray() {
        boolean[] out = new boolean[Math.toIntExact(numel)];
        TensorNatives.toBooleans(nativeHandle(), out);
        return out;
    }

    /** The values, copied to a Java array (int64 CPU tensors). */
    public long[] toLongArray() {
        long[] out = new long[Math.toIntExact(numel)];
        TensorNatives.toLongs(nativeHandle(), out);
        return out;
    }

    /**
     * The single value of a one-element float32 tensor. Mirrors {@code Tensor.item()}.
     *
     * @throws IllegalArgumentException if numel() != 1
     */
    public float item() {
        if (numel != 1) {
            throw new IllegalArgumentException("item() needs a tensor with one element, got shape " + Arrays.toString(shape));
        }
        return toFloatArray()[0];
    }

    /** Overwrites every element with value (no autograd). Returns this. Mirrors {@code Tensor.fill_}. */
    public Tensor fill(double value) {
        TensorNatives.fill(nativeHandle(), value);
        return this;
    }

    /**
     * Copies src's values into this tensor (same numel, any devices; no autograd). Between float32,
     * bfloat16 and float16 it converts, rounding as {@link #to(DType)} (CPU tensors only so far).
     * Mirrors {@code Tensor.copy_}.
     *
     * @throws IllegalArgumentException when the numels differ, or for a conversion to or from int64
     *     or on a GPU
     */
    public Tensor copyFrom(Tensor src) {
        TensorNatives.copyInto(src.nativeHandle(), nativeHandle());
        return this;
    }

    /** this += alpha * other, in place, no autograd. Mirrors {@code Tensor.add_(other, alpha=alpha)}. */
    public Tensor addInPlace(Tensor other, float alpha) {
        ElementwiseNatives.addInPlace(nativeHandle(), other.nativeHandle(), alpha);
        return this;
    }

    /** this *= s, in place, no autograd. Mirrors {@code Tensor.mul_}. */
    public Tensor mulInPlace(float s) {
        ElementwiseNatives.scaleInPlace(nativeHandle(), s);
        return this;
    }

    /** A copy with its own storage, outside autograd. Mirrors {@code Tensor.clone().detach()}. */
    public Tensor copy() {
        return fromNativeResult(TensorNatives.cloneTensor(nativeHandle(), NativeResults.buffer()));
    }

    /**
     * A tensor of {@code shape} viewing elements [offset, offset + numel(shape)) of this tensor's
     * flat data (shared storage, no autograd), outside any scope. For laying gradients out in
     * one flat buffer, as DDP's buckets do.
     *
     * @throws IllegalArgumentException if the range is out of bounds
     */
    public Tensor flatSlice(long offset, long... shape) {
        return fromNativeResultUntracked(TensorNatives.flatSlice(nativeHandle(), offset, shape, NativeResults.buffer()));
    }

    /** A tensor sharing this one's storage, cut from the graph. Mirrors {@code Tensor.detach()}. */
    public Tensor detach() {
        return fromNativeResult(TensorNatives.view(nativeHandle(), shape, NativeResults.buffer()));
    }

    /**
     * This tensor on {@code target}: this when it is already there, else a copy (differentiable:
     * the gradient flows back to this device). Mirrors {@code Tensor.to(device)}.
     *
     * @throws IllegalStateException when target is a GPU and there is none, or this build has no CUDA library
     * @throws IllegalArgumentException when target's ordinal is not a visible GPU
     */
    public Tensor to(Device target) {
        if (target.equals(device)) {
            return this;
        }
        Devices.require(target);
        Tensor out = fromNativeResult(TensorNatives.toDevice(nativeHandle(), target.type().ordinal(), target.index(), NativeResults.buffer()));
        Device source = device;
        return new Node("ToCopyBackward", this) {
            @Override
            protected Tensor[] backward(Tensor g) {
                return new Tensor[] {g.to(source)};
            }
        }.attach(out);
    }

    /**
     * This tensor converted to {@code target}: this when it already has that dtype, else a new
     * tensor of the same shape and device. Differentiable, as PyTorch's: the gradient is converted
     * back to this tensor's dtype. Between float32, bfloat16 and float16 (any pair), rounding to
     * nearest even, keeping subnormals, overflowing to inf; a NaN stays NaN (bfloat16 NaN is
     * 0xFFFF, float16 NaN sign|0x7E00, as PyTorch's CPU tensors hold them). Widening to float32 is
     * exact. Mirrors {@code Tensor.to(dtype)}.
     *
     * @throws IllegalArgumentException for int64 on either side, or a tensor on a GPU (not supported
     *     yet; the message names the fix)
     */
    public Tensor to(DType target) {
        if (target == dtype) {
            return this;
        }
        Tensor out = fromNativeResult(TensorNatives.toDType(nativeHandle(), target.ordinal(), NativeResults.buffer()));
        DType source = dtype;
        return new Node("ToCopyBackward", this) {
            @Override
            protected Tensor[] backward(Tensor g) {
                return new Tensor[] {g.to(source)};
            }
        }.attach(out);
    }

    /**
     * Moves this tensor's data to {@code target} in place, keeping the object (and so the
     * references modules and optimisers hold), requiresGrad and hooks; a gradient moves too. What
     * {@code Module.to} does to each parameter and buffer, as PyTorch's {@code param.data =
     * param.data.to(device)}. Only for leaves.
     *
     * @throws IllegalStateException on a non-leaf, a closed tensor, or when target cannot be used
     */
    public void moveTo(Device target) {
        if (target.equals(device)) {
            return;
        }
        if (gradFn != null) {
            throw new IllegalStateException("moveTo is for leaf tensors (parameters, buffers); " + describe()
                    + " was produced by " + gradFn.name() + ": use to(device)");
        }
        Devices.require(target);
        handle.replace(TensorNatives.toDevice(nativeHandle(), target.type().ordinal(), target.index(),
                NativeResults.buffer()));
        device = target;
        if (grad != null) {
            grad.moveTo(target);
        }
    }

    // ---- autograd -----------------------------------------------------------------------------------

    /** Whether gradients flow to this tensor. Mirrors {@code Tensor.requires_grad}. */
    public boolean requiresGrad() {
        return requiresGrad;
    }

    /**
     * Marks a leaf as needing a gradient (for parameters). Returns this. Mirrors {@code Tensor.requires_grad_}.
     *
     * @throws IllegalStateException on a non-leaf
     */
    public Tensor requiresGrad(boolean value) {
        if (gradFn != null) {
            throw new IllegalStateException("requiresGrad(" + value + ") is only for leaf tensors; "
                    + "this one was produced by " + gradFn.name() + " (use detach())");
        }
        requiresGrad = value;
        return this;
    }

    /** True when no op produced this tensor under autograd. Mirrors {@code Tensor.is_leaf}. */
    public boolean isLeaf() {
        return gradFn == null;
    }

    /** The accumulated gradient of a leaf, or null before the first backward. Mirrors {@code Tensor.grad}. */
    public Tensor grad() {
        return grad;
    }

    /** Replaces the gradient (it must have this tensor's shape), e.g. with a view into a DDP bucket. */
    public void setGrad(Tensor newGrad) {
        if (newGrad != null && !Arrays.equals(newGrad.shape, shape)) {
            throw new IllegalArgumentException("gradient shape " + Arrays.toString(newGrad.shape)
                    + " does not match tensor shape " + Arrays.toString(shape));
        }
        grad = newGrad;
        gradOwned = false;
    }

    /**
     * Drops the gradient, as PyTorch's {@code p.grad = None} (what {@code zero_grad(set_to_none=True)}
     * does): {@link #grad()} is null afterwards and the next backward allocates a fresh one. A
     * gradient autograd allocated is freed now; one given through {@link #setGrad} (e.g. a
     * DistributedDataParallel bucket view) belongs to whoever gave it and is left open.
     */
    public void clearGrad() {
        Tensor old = grad;
        boolean owned = gradOwned;
        grad = null;
        gradOwned = false;
        if (old != null && owned) {
            old.close();
        }
    }

    /** The node that produced this tensor, or null for a leaf. Mirrors {@code Tensor.grad_fn}. */
    public Node gradFn() {
        return gradFn;
    }

    void setGradFn(Node node) {
        gradFn = node;
        requiresGrad = true;
    }

    /**
     * Runs {@code hook} each time a gradient has been accumulated into this leaf's {@link #grad()}.
     * Mirrors {@code Tensor.register_post_accumulate_grad_hook}.
     */
    public void registerPostAccumulateGradHook(Consumer<Tensor> hook) {
        if (postAccumulateGradHooks == null) {
            postAccumulateGradHooks = new ArrayList<>();
        }
        postAccumulateGradHooks.add(hook);
    }

    void accumulateGrad(Tensor incoming) {
        if (grad == null) {
            grad = fromNativeResultUntracked(TensorNatives.cloneTensor(incoming.nativeHandle(), NativeResults.buffer()));
            gradOwned = true;
        } else {
            grad.addInPlace(incoming, 1f);
        }
        if (postAccumulateGradHooks != null) {
            for (Consumer<Tensor> hook : postAccumulateGradHooks) {
                hook.accept(this);
            }
        }
    }

    /**
     * Computes the gradient of this scalar with respect to every leaf that requires grad and
     * accumulates it into their {@link #grad()}. Mirrors {@code Tensor.backward()}.
     *
     * @throws IllegalStateException if this tensor does not require grad or is not a scalar
     */
    public void backward() {
        if (numel != 1) {
            throw new IllegalStateException("backward() needs a scalar (e.g. a loss); got shape " + Arrays.toString(shape));
        }
        Autograd.backward(this, full(1, dtype, device, shape), true);
    }

    /**
     * Backward from this tensor with an explicit output gradient of the same shape (left open: the
     * caller owns it). Gradients of non-leaf tensors are freed as soon as backward has used them,
     * as PyTorch does; only leaves' {@link #grad()} remain.
     */
    public void backward(Tensor gradOutput) {
        Autograd.backward(this, gradOutput, false);
    }

    // ---- differentiable ops -------------------------------------------------------------------------

    /**
     * this + other with PyTorch broadcasting (sizes align from the right; a missing or size-1
     * dimension stretches); the backward sums each gradient back to its input's shape. float32.
     * Equal shapes take the same-shape kernel (on any device). Mirrors {@code torch.add}.
     *
     * @throws IllegalArgumentException when the shapes cannot be broadcast (the message names both)
     *     or a dtype is not float32
     */
    public Tensor add(Tensor other) {
        return Arrays.equals(shape, other.shape) ? ElementwiseOps.add(this, other, 1f) : BroadcastOps.add(this, other);
    }

    /** this - other with broadcasting, as {@link #add(Tensor)}. Mirrors {@code torch.sub}. */
    public Tensor sub(Tensor other) {
        return Arrays.equals(shape, other.shape) ? ElementwiseOps.add(this, other, -1f) : BroadcastOps.sub(this, other);
    }

    /** this * other element-wise with broadcasting, as {@link #add(Tensor)}. Mirrors {@code torch.mul}. */
    public Tensor mul(Tensor other) {
        return Arrays.equals(shape, other.shape) ? ElementwiseOps.mul(this, other) : BroadcastOps.mul(this, other);
    }

    /**
     * this / other element-wise (true division) with broadcasting, as {@link #add(Tensor)}; CPU.
     * Mirrors {@code torch.div}.
     */
    public Tensor div(Tensor other) {
        return BroadcastOps.div(this, other);
    }

    /** this * s (s rounded to float32). */
    public Tensor mul(float s) {
        return ElementwiseOps.scale(this, s);
    }

    /** this * s, s rounded to float32 as PyTorch does for a float32 tensor. Mirrors {@code torch.mul(x, s)}. */
    public Tensor mul(double s) {
        return ElementwiseOps.scale(this, (float) s);
    }

    /** this + s (float32; s rounded to float32); CPU. Mirrors {@code torch.add(x, s)}. */
    public Tensor add(double s) {
        return UnaryOps.addScalar(this, s);
    }

    /** this / s (float32; s rounded to float32); CPU. Mirrors {@code torch.div(x, s)}. */
    public Tensor div(double s) {
        return UnaryOps.divScalar(this, s);
    }

    /** e^this element-wise (float32; CPU). Mirrors {@code torch.exp}. */
    public Tensor exp() {
        return UnaryOps.exp(this);
    }

    /** Natural logarithm element-wise (float32; CPU; log 0 = -inf, log of a negative NaN). Mirrors {@code torch.log}. */
    public Tensor log() {
        return UnaryOps.log(this);
    }

    /** Hyperbolic tangent element-wise (float32; CPU). Mirrors {@code torch.tanh}. */
    public Tensor tanh() {
        return UnaryOps.tanh(this);
    }

    /**
     * this raised to {@code exponent} element-wise (float32; CPU; exponents 2, 3, 0.5 and -1 by
     * multiplication, sqrt and division, as PyTorch). Mirrors {@code torch.pow(x, exponent)}.
     */
    public Tensor pow(double exponent) {
        return UnaryOps.pow(this, exponent);
    }

    /** Square root element-wise (float32; CPU). Mirrors {@code torch.sqrt}. */
    public Tensor sqrt() {
        return UnaryOps.sqrt(this);
    }

    /** -this element-wise (float32; CPU). Mirrors {@code torch.neg}. */
    public Tensor neg() {
        return UnaryOps.neg(this);
    }

    // ---- comparisons and masks (bool results, no gradient; CPU) ------------------------------------

    /**
     * this == other element-wise with broadcasting: a {@link DType#BOOL} tensor. Both operands of
     * one dtype (float32, int64 or bool). Mirrors {@code torch.eq}.
     *
     * @throws IllegalArgumentException when the shapes cannot be broadcast or the dtypes differ
     */
    public Tensor eq(Tensor other) {
        return BroadcastOps.compare(this, other, org.ddp4j.internal.BroadcastNatives.EQ);
    }

    /** this != other, as {@link #eq}. Mirrors {@code torch.ne}. */
    public Tensor ne(Tensor other) {
        return BroadcastOps.compare(this, other, org.ddp4j.internal.BroadcastNatives.NE);
    }

    /** this &lt; other, as {@link #eq}. Mirrors {@code torch.lt}. */
    public Tensor lt(Tensor other) {
        return BroadcastOps.compare(this, other, org.ddp4j.internal.BroadcastNatives.LT);
    }

    /** this &gt; other, as {@link #eq}. Mirrors {@code torch.gt}. */
    public Tensor gt(Tensor other) {
        return BroadcastOps.compare(this, other, org.ddp4j.internal.BroadcastNatives.GT);
    }

    /** this &lt;= other, as {@link #eq}. Mirrors {@code torch.le}. */
    public Tensor le(Tensor other) {
        return BroadcastOps.compare(this, other, org.ddp4j.internal.BroadcastNatives.LE);
    }

    /** this &gt;= other, as {@link #eq}. Mirrors {@code torch.ge}. */
    public Tensor ge(Tensor other) {
        return BroadcastOps.compare(this, other, org.ddp4j.internal.BroadcastNatives.GE);
    }

    /**
     * Element-wise NOT of a {@link DType#BOOL} tensor. Mirrors {@code torch.logical_not}.
     *
     * @throws IllegalArgumentException if this is not bool
     */
    public Tensor logicalNot() {
        return UnaryOps.raw(this, org.ddp4j.internal.UnaryNatives.LOGICAL_NOT, 0);
    }

    /**
     * condition ? a : b element-wise, the three broadcast together (condition {@link DType#BOOL};
     * a and b of one dtype). The gradient flows to a where condition holds, to b elsewhere, each
     * summed back to its shape. Mirrors {@code torch.where(condition, a, b)}.
     *
     * @throws IllegalArgumentException when the shapes cannot be broadcast or the dtypes are wrong
     */
    public static Tensor where(Tensor condition, Tensor a, Tensor b) {
        return BroadcastOps.where(condition, a, b);
    }

    /**
     * This tensor with {@code value} wherever mask is true; mask is {@link DType#BOOL} and
     * broadcasts to this tensor's shape (e.g. a causal mask [T, T] over scores [B, H, T, T]). The
     * gradient is 0 at the filled places. Mirrors {@code torch.Tensor.masked_fill}.
     *
     * @throws IllegalArgumentException if mask is not bool or does not broadcast to this shape
     */
    public Tensor maskedFill(Tensor mask, double value) {
        return BroadcastOps.maskedFill(this, mask, value);
    }

    // ---- matrix products, shapes ---------------------------------------------------------------------

    /**
     * The matrix product with torch.matmul's rules (float32, CPU): 1-D · 1-D is a dot product
     * (shape []); a 1-D first operand is a row and a 1-D second a column, that dimension dropped
     * from the result; otherwise [..., m, k] · [..., k, n] -> [..., m, n] with the batch dims
     * broadcast ([2, 1, 4, 5] · [3, 5, 2] -> [2, 3, 4, 2]). GEMMs go through ddp4j's BLAS path,
     * the backward's transposed operands through the BLAS flags (no copies). Mirrors {@code torch.matmul}.
     *
     * @throws IllegalArgumentException when the inner sizes differ or the batch dims cannot be
     *     broadcast (the message names both shapes), for a 0-dimensional operand or a non-float32 dtype
     */
    public Tensor matmul(Tensor other) {
        return MatmulOps.matmul(this, other);
    }

    /**
     * This tensor with dimensions dim0 and dim1 swapped (negative dims count from the end). A
     * contiguous copy: the native tensor has no strides, so this is PyTorch's
     * {@code transpose(dim0, dim1).contiguous()}; later changes to either tensor do not show in
     * the other. Mirrors {@code torch.transpose}.
     *
     * @throws IllegalArgumentException if a dim is out of range (the message names the shape)
     */
    public Tensor transpose(int dim0, int dim1) {
        return ShapeOps.transpose(this, dim0, dim1);
    }

    /**
     * This tensor with its dimensions reordered: dimension i of the result is dimension dims[i]
     * of this one (negative dims count from the end). A contiguous copy, as {@link #transpose}.
     * Mirrors {@code torch.permute(...).contiguous()}.
     *
     * @throws IllegalArgumentException unless dims is a permutation of this tensor's dimensions
     */
    public Tensor permute(int... dims) {
        return ShapeOps.permute(this, dims);
    }

    /**
     * This tensor: ddp4j's tensors are always contiguous (ops that PyTorch does as strided views
     * copy). Mirrors {@code torch.Tensor.contiguous}.
     */
    public Tensor contiguous() {
        return this;
    }

    /**
     * Pieces of {@code splitSize} along dim (the last may be smaller), each a contiguous copy.
     * Mirrors {@code torch.split(x, splitSize, dim)}.
     *
     * @throws IllegalArgumentException if splitSize &lt;= 0 or dim is out of range
     */
    public List<Tensor> split(long splitSize, int dim) {
        return ShapeOps.splitEvery(this, splitSize, dim);
    }

    /**
     * Pieces of the given sizes along dim (they must add up to its size), each a contiguous copy.
     * Mirrors {@code torch.split(x, [sizes], dim)}.
     *
     * @throws IllegalArgumentException if the sizes do not add up to size(dim) or dim is out of range
     */
    public List<Tensor> split(long[] sizes, int dim) {
        return ShapeOps.split(this, sizes, dim);
    }

    /**
     * {@code chunks} pieces along dim of ceil(size / chunks) each (the last smaller; fewer pieces
     * when the size does not go round), contiguous copies. Mirrors {@code torch.chunk}.
     *
     * @throws IllegalArgumentException if chunks &lt;= 0 or dim is out of range
     */
    public List<Tensor> chunk(int chunks, int dim) {
        return ShapeOps.chunk(this, chunks, dim);
    }

    /**
     * The tensors joined along dim (one dtype and device, equal sizes in the other dimensions);
     * the gradient is split back. Mirrors {@code torch.cat}.
     *
     * @throws IllegalArgumentException for an empty list, mismatched shapes (named), dtypes or devices
     */
    public static Tensor cat(List<Tensor> tensors, int dim) {
        return ShapeOps.cat(tensors, dim);
    }

    /**
     * The tensors (of one shape) joined along a new dimension dim (in [-(n+1), n] for n-D
     * tensors). Mirrors {@code torch.stack}.
     *
     * @throws IllegalArgumentException for an empty list or different shapes (named)
     */
    public static Tensor stack(List<Tensor> tensors, int dim) {
        return ShapeOps.stack(tensors, dim);
    }

    /**
     * The slices {@code index} (int64, 1-D) along dim, a new tensor (any dtype; CPU); the
     * gradient adds each slice's gradient back at its index (repeats add, in index order).
     * Mirrors {@code torch.index_select} (an embedding lookup is {@code weight.indexSelect(0, ids)}).
     *
     * @throws IllegalArgumentException for a non-int64 or non-1-D index, or a value out of range (named)
     */
    public Tensor indexSelect(int dim, Tensor index) {
        return ShapeOps.indexSelect(this, dim, index);
    }

    /**
     * out[i][j][k] = this[i][index[i][j][k]][k] for dim 1 (likewise other dims): index is int64
     * with this tensor's number of dims and no larger in the others; the result has index's shape.
     * The gradient is scatter-added back (deterministically, in index order). CPU. Mirrors {@code torch.gather}.
     *
     * @throws IllegalArgumentException for a bad index dtype, shape (named) or value
     */
    public Tensor gather(int dim, Tensor index) {
        return ShapeOps.gather(this, dim, index);
    }

    /**
     * The lower triangle of the last two dims (elements with column - row &lt;= diagonal kept, the
     * rest 0 or false); float32, int64 or bool. Mirrors {@code torch.tril}.
     *
     * @throws IllegalArgumentException for fewer than 2 dims
     */
    public Tensor tril(long diagonal) {
        return ShapeOps.triangle(this, diagonal, false);
    }

    /** The upper triangle (column - row &gt;= diagonal kept), as {@link #tril}. Mirrors {@code torch.triu}. */
    public Tensor triu(long diagonal) {
        return ShapeOps.triangle(this, diagonal, true);
    }

    // ---- reductions and softmax (float32; CPU) --------------------------------------------------

    /**
     * Sum over dim (negative counts from the end), in double; keepdim keeps it as size 1.
     * Mirrors {@code torch.sum(x, dim, keepdim)}.
     *
     * @throws IllegalArgumentException if dim is out of range or this is not float32
     */
    public Tensor sum(int dim, boolean keepdim) {
        return ReduceOps.sum(this, new int[] {dim}, keepdim, false);
    }

    /** Sum over several dims (each once), as {@link #sum(int, boolean)}. Mirrors {@code torch.sum(x, dims, keepdim)}. */
    public Tensor sum(int[] dims, boolean keepdim) {
        if (dims.length == 0) {
            throw new IllegalArgumentException("sum: give at least one dimension (use sum() for all), shape "
                    + Arrays.toString(shape));
        }
        return ReduceOps.sum(this, dims, keepdim, false);
    }

    /** Mean over dim, as {@link #sum(int, boolean)}. Mirrors {@code torch.mean(x, dim, keepdim)}. */
    public Tensor mean(int dim, boolean keepdim) {
        return ReduceOps.sum(this, new int[] {dim}, keepdim, true);
    }

    /** Mean over several dims, as {@link #sum(int[], boolean)}. Mirrors {@code torch.mean(x, dims, keepdim)}. */
    public Tensor mean(int[] dims, boolean keepdim) {
        if (dims.length == 0) {
            throw new IllegalArgumentException("mean: give at least one dimension (use mean() for all), shape "
                    + Arrays.toString(shape));
        }
        return ReduceOps.sum(this, dims, keepdim, true);
    }

    /**
     * The largest value along dim (NaN counts as largest); the gradient is spread evenly over tied
     * maxima, as PyTorch's. Mirrors {@code torch.amax(x, dim, keepdim)}.
     *
     * @throws IllegalArgumentException if dim is out of range or empty
     */
    public Tensor amax(int dim, boolean keepdim) {
        return ReduceOps.amax(this, dim, keepdim);
    }

    /**
     * {values, indices}: the largest value along dim and its index (int64; the first on ties);
     * the gradient goes to that index. Mirrors {@code torch.max(x, dim, keepdim)}.
     *
     * @throws IllegalArgumentException if dim is out of range or empty
     */
    public Tensor[] max(int dim, boolean keepdim) {
        return ReduceOps.max(this, dim, keepdim);
    }

    /**
     * exp(x - max) / Σ exp(x - max) along dim (any dim; max subtracted for stability, sums in
     * double). Mirrors {@code torch.softmax(x, dim)}.
     *
     * @throws IllegalArgumentException if dim is out of range or this is not float32
     */
    public Tensor softmax(int dim) {
        return ReduceOps.softmax(this, dim, false);
    }

    /** x - max - log Σ exp(x - max) along dim, as {@link #softmax}. Mirrors {@code torch.log_softmax(x, dim)}. */
    public Tensor logSoftmax(int dim) {
        return ReduceOps.softmax(this, dim, true);
    }

    /** Sum of all elements, shape []. Mirrors {@code torch.sum}. */
    public Tensor sum() {
        return ElementwiseOps.sum(this);
    }

    /** Mean of all elements, shape []. Mirrors {@code torch.mean}. */
    public Tensor mean() {
        return sum().mul(1f / numel);
    }

    /**
     * The same elements in a new shape (one size may be -1, inferred from the others). Shares
     * storage. Mirrors {@code Tensor.reshape}.
     *
     * @throws IllegalArgumentException if the sizes do not multiply to numel()
     */
    public Tensor reshape(long... newShape) {
        return ElementwiseOps.reshape(this, newShape);
    }

    /** Alias of {@link #reshape}. Mirrors {@code Tensor.view}. */
    public Tensor view(long... newShape) {
        return reshape(newShape);
    }

    /**
     * Index of the largest element of each row of a 2-D tensor, int64 [N] (no gradient).
     * Mirrors {@code torch.argmax(x, dim=1)}.
     *
     * @throws IllegalArgumentException if dim is not 1 or the tensor is not 2-D
     */
    public Tensor argmax(int dim) {
        if (dim != 1 && dim != -1) {
            throw new IllegalArgumentException("argmax supports dim 1 of a 2-D tensor, got dim " + dim);
        }
        return fromNativeResult(ElementwiseNatives.argmaxRows(nativeHandle(), NativeResults.buffer()));
    }

    @Override
    public String toString() {
        return TensorFormat.format(this);
    }
}
