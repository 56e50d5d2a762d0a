package org.ddp4j.distributed;

import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.ddp4j.tensor.Device;
import org.ddp4j.tensor.Tensor;

/**
 * A group that passes every call to another one and counts the collectives issued through it,
 * for tests that assert a layer communicates (or does not): SyncBatchNorm in eval mode, say.
 * In this package because a ProcessGroup's constructor is package-private.
 */
public final class CountingProcessGroup extends ProcessGroup {
    private final ProcessGroup inner;
    private final AtomicInteger collectives = new AtomicInteger();

    public CountingProcessGroup(ProcessGroup inner) {
        this.inner = inner;
    }

    /** Collectives and point-to-point calls issued so far. */
    public int collectives() {
        return collectives.get();
    }

    private <T> T counted(T work) {
        collectives.incrementAndGet();
        return work;
    }

    @Override
    public int rank() {
        return inner.rank();
    }

    @Override
    public int size() {
        return inner.size();
    }

    @Override
    public String backend() {
        return inner.backend();
    }

    @Override
    public List<Integer> ranks() {
        return inner.ranks();
    }

    @Override
    public Device device() {
        return inner.device();
    }

    @Override
    public Work allReduce(Tensor tensor, ReduceOp op) {
        return counted(inner.allReduce(tensor, op));
    }

    @Override
    public Work allReduceBucket(Tensor tensor, ReduceOp op, boolean runInline, int bucket, int buckets) {
        return counted(inner.allReduceBucket(tensor, op, runInline, bucket, buckets));
    }

    @Override
    public Work broadcast(Tensor tensor, int src) {
        return counted(inner.broadcast(tensor, src));
    }

    @Override
    public Work allGather(List<Tensor> outputs, Tensor input) {
        return counted(inner.allGather(outputs, input));
    }

    @Override
    public Work allGatherIntoTensor(Tensor output, Tensor input) {
        return counted(inner.allGatherIntoTensor(output, input));
    }

    @Override
    public Work barrier() {
        return counted(inner.barrier());
    }

    @Override
    public Work reduce(Tensor tensor, int dst, ReduceOp op) {
        return counted(inner.reduce(tensor, dst, op));
    }

    @Override
    public Work reduceScatter(Tensor output, List<Tensor> inputs, ReduceOp op) {
        return counted(inner.reduceScatter(output, inputs, op));
    }

    @Override
    public Work reduceScatterTensor(Tensor output, Tensor input, ReduceOp op) {
        return counted(inner.reduceScatterTensor(output, input, op));
    }

    @Override
    public Work send(Tensor tensor, int dst, int tag) {
        return counted(inner.send(tensor, dst, tag));
    }

    @Override
    public Work recv(Tensor tensor, int src, int tag) {
        return counted(inner.recv(tensor, src, tag));
    }

    /** Leaves the inner group open: its owner closes it. */
    @Override
    public void close() {}
}
