package org.ddp4j.distributed;

import java.time.Duration;
import java.util.List;
import java.util.Objects;
import org.ddp4j.distributed.store.Store;
import org.ddp4j.internal.ProcessGroupNatives;
import org.ddp4j.internal.TensorHandles;
import org.ddp4j.tensor.Tensor;

/**
 * What the Gloo and NCCL groups share: the checked rank, size and timeout, the native group
 * handle (0 once closed), the collectives (one set of natives, {@link ProcessGroupNatives}, serves
 * both backends; each returns a {@link NativeWork}), and closing the group together with the stores
 * {@link Distributed} opened for it. A backend creates its native group and checks its tensors
 * ({@link #checkTensor}). Methods that use the handle are synchronized on the group.
 */
abstract class NativeProcessGroup extends ProcessGroup {
    private final int rank;
    private final int size;
    private final Duration timeout;
    private final AutoCloseable resources;
    private final Store store; // kept for the stall inspector's progress keys (FlightRecorderMonitor)
    private long handle;
    private List<Integer> ranks; // the default group's ranks of a subgroup's members; null: [0, size)

    /**
     * Checks the arguments every backend takes; the subclass then creates its native group and
     * passes it to {@link #setHandle}.
     *
     * @throws IllegalArgumentException for a size below 1, a rank outside {@code [0, size)} or a non-positive timeout
     */
    NativeProcessGroup(Store store, int rank, int size, Duration timeout, AutoCloseable resources) {
        Objects.requireNonNull(store, "store");
        Objects.requireNonNull(timeout, "timeout");
        if (size < 1) {
            throw new IllegalArgumentException("world size must be at least 1, got " + size);
        }
        if (rank < 0 || rank >= size) {
            throw new IllegalArgumentException("rank must be in [0, " + size + "), got " + rank);
        }
        if (timeout.isNegative() || timeout.isZero()) {
            throw new IllegalArgumentException("timeout must be positive, got " + timeout);
        }
        this.rank = rank;
        this.size = size;
        this.timeout = timeout;
        this.resources = resources;
        this.store = store;
        FlightRecorderMonitor.ensureStarted(); // a bad DDP4J_STALL_WARNING_SECONDS fails before the native group exists
    }

    /** Makes this group a subgroup whose group rank r is default-group rank {@code ranks.get(r)} ({@link Distributed#newGroup}). */
    final void setRanks(List<Integer> ranks) {
        this.ranks = List.copyOf(ranks);
    }

    @Override
    public List<Integer> ranks() {
        return ranks != null ? ranks : super.ranks();
    }

    /** The store the group met on (its own key space); ExitMarks and the stall inspector write there. */
    Store store() {
        return store;
    }

    /** The native group, created by the subclass's constructor. */
    final void setHandle(long handle) {
        this.handle = handle;
        FlightRecorderMonitor.register(this, handle, store);
        ExitMarks.register(this);
    }

    /**
     * Checks, before any native call, a tensor passed to {@code op} ({@code what} names it in
     * messages, e.g. "tensor", "output 1").
     *
     * @throws NullPointerException if {@code t} is null
     * @throws IllegalArgumentException if the backend cannot take it (e.g. NCCL: not on the group's GPU)
     */
    abstract void checkTensor(String op, String what, Tensor t);

    @Override
    public int rank() {
        return rank;
    }

    @Override
    public int size() {
        return size;
    }

    /** The rendezvous and per-collective timeout. */
    public Duration timeout() {
        return timeout;
    }

    @Override
    public synchronized Work allReduce(Tensor tensor, ReduceOp op) {
        Objects.requireNonNull(op, "op");
        checkTensor("allReduce", "tensor", tensor);
        return work(ProcessGroupNatives.allReduce(handle("allReduce"), TensorHandles.nativeHandle(tensor), op.ordinal()),
                "allReduce");
    }

    @Override
    public synchronized Work allReduceBucket(Tensor tensor, ReduceOp op, boolean runInline, int bucket, int buckets) {
        checkTensor("allReduce", "tensor", tensor);
        long work = ProcessGroupNatives.allReduceBucket(handle("allReduce"), TensorHandles.nativeHandle(tensor), op.ordinal(),
                runInline, bucket, buckets);
        return work(work, "allReduce");
    }

    @Override
    public synchronized Work broadcast(Tensor tensor, int src) {
        checkTensor("broadcast", "tensor", tensor);
        return work(ProcessGroupNatives.broadcast(handle("broadcast"), TensorHandles.nativeHandle(tensor), src), "broadcast");
    }

    @Override
    public synchronized Work allGather(List<Tensor> outputs, Tensor input) {
        Objects.requireNonNull(outputs, "outputs");
        checkTensor("allGather", "input", input);
        long[] handles = new long[outputs.size()];
        for (int i = 0; i < handles.length; i++) {
            Tensor out = outputs.get(i);
            checkTensor("allGather", "output " + i, out);
            handles[i] = TensorHandles.nativeHandle(out);
        }
        return work(ProcessGroupNatives.allGather(handle("allGather"), handles, TensorHandles.nativeHandle(input)),
                "allGather");
    }

    @Override
    public synchronized Work allGatherIntoTensor(Tensor output, Tensor input) {
        checkTensor("allGatherIntoTensor", "output", output);
        checkTensor("allGatherIntoTensor", "input", input);
        return work(ProcessGroupNatives.allGatherIntoTensor(handle("allGatherIntoTensor"), TensorHandles.nativeHandle(output),
                TensorHandles.nativeHandle(input)), "allGatherIntoTensor");
    }

    @Override
    public synchronized Work barrier() {
        return work(ProcessGroupNatives.barrier(handle("barrier")), "barrier");
    }

    @Override
    public synchronized Work reduce(Tensor tensor, int dst, ReduceOp op) {
        Objects.requireNonNull(op, "op");
        checkTensor("reduce", "tensor", tensor);
        return work(ProcessGroupNatives.reduce(handle("reduce"), TensorHandles.nativeHandle(tensor), dst, op.ordinal()), "reduce");
    }

    @Override
    public synchronized Work reduceScatter(Tensor output, List<Tensor> inputs, ReduceOp op) {
        Objects.requireNonNull(inputs, "inputs");
        Objects.requireNonNull(op, "op");
        checkTensor("reduceScatter", "output", output);
        long[] handles = new long[inputs.size()];
        for (int i = 0; i < handles.length; i++) {
            Tensor in = inputs.get(i);
            checkTensor("reduceScatter", "input " + i, in);
            handles[i] = TensorHandles.nativeHandle(in);
        }
        return work(ProcessGroupNatives.reduceScatter(handle("reduceScatter"), TensorHandles.nativeHandle(output), handles,
                op.ordinal()), "reduceScatter");
    }

    @Override
    public synchronized Work reduceScatterTensor(Tensor output, Tensor input, ReduceOp op) {
        Objects.requireNonNull(op, "op");
        checkTensor("reduceScatterTensor", "output", output);
        checkTensor("reduceScatterTensor", "input", input);
        return work(ProcessGroupNatives.reduceScatterTensor(handle("reduceScatterTensor"), TensorHandles.nativeHandle(output),
                TensorHandles.nativeHandle(input), op.ordinal()), "reduceScatterTensor");
    }

    @Override
    public synchronized Work send(Tensor tensor, int dst, int tag) {
        checkTensor("send", "tensor", tensor);
        return work(ProcessGroupNatives.send(handle("send"), TensorHandles.nativeHandle(tensor), dst, tag), "send");
    }

    @Override
    public synchronized Work recv(Tensor tensor, int src, int tag) {
        checkTensor("recv", "tensor", tensor);
        return work(ProcessGroupNatives.recv(handle("recv"), TensorHandles.nativeHandle(tensor), src, tag), "recv");
    }

    /** A Work for a native work handle; 0 means the collective already finished successfully. */
    private static Work work(long handle, String op) {
        return handle == 0 ? Work.COMPLETED : new NativeWork(handle, op);
    }

    /** Whether {@link #close()} has been called. */
    public synchronized boolean isClosed() {
        return handle == 0;
    }

    /** The native group for {@code op}; throws IllegalStateException naming the op once closed. */
    final synchronized long handle(String op) {
        if (handle == 0) {
            throw new IllegalStateException(op + ": the process group (" + backend() + ", rank " + rank + " of " + size
                    + ") is closed");
        }
        return handle;
    }

    /**
     * Destroys the native group (Gloo: fails queued collectives, waits for the running one; NCCL:
     * waits for pending collectives, at most the timeout, then destroys the communicator, or aborts
     * it when the group failed), then closes the stores opened for it. Idempotent. Mirrors
     * {@code destroy_process_group(group)}.
     */
    @Override
    public synchronized void close() {
        if (handle == 0) {
            return;
        }
        long h = handle;
        handle = 0;
        ExitMarks.markClosing(this); // before the connections close: peers then read "closed", not "killed"
        try {
            FlightRecorderMonitor.unregister(this); // before the record it reads is freed
            ProcessGroupNatives.destroy(h);
        } finally {
            if (resources != null) {
                try {
                    resources.close();
                } catch (Exception ignored) {
                    // the group is gone either way
                }
            }
        }
    }

    /** A timeout in whole milliseconds for the natives: at least 1, Long.MAX_VALUE when it overflows. */
    static long millis(Duration d) {
        try {
            return Math.max(1, d.toMillis());
        } catch (ArithmeticException overflow) {
            return Long.MAX_VALUE;
        }
    }
}
