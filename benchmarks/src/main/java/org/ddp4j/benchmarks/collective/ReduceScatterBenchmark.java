package org.ddp4j.benchmarks.collective;

import org.ddp4j.distributed.ProcessGroup;
import org.ddp4j.distributed.ReduceOp;
import org.ddp4j.tensor.Tensor;

/**
 * Reduce-scatter (SUM) into one tensor: each rank's input is {@link #bytes} (n x its output of
 * {@code bytes / n}; at least one float32 element per rank), as {@code
 * dist.reduce_scatter_tensor(output, input)}. As nccl-tests' reduce_scatter_perf, the reported
 * size is the input per rank (n x the output) and busbw = algbw x (n-1)/n.
 */
public class ReduceScatterBenchmark extends CollectiveBenchmark {
    private Tensor input;
    private Tensor output;

    @Override
    protected void prepare(ProcessGroup group, long bytes) {
        long perRank = outputElements(bytes, group.size());
        input = onDevice(Tensor.ones(perRank * group.size()), group.device());
        output = onDevice(Tensor.zeros(perRank), group.device());
    }

    @Override
    protected void run(ProcessGroup group) {
        group.reduceScatterTensor(output, input, ReduceOp.SUM).awaitBlocking();
    }

    @Override
    protected void release() {
        input.close();
        output.close();
    }

    @Override
    public String redop() {
        return "sum";
    }

    @Override
    public double busBandwidthFactor(int ranks) {
        return (ranks - 1.0) / ranks;
    }

    @Override
    public long reportedBytes(long bytes, int ranks) {
        return outputElements(bytes, ranks) * ranks * Float.BYTES;
    }

    /** float32 elements of each rank's output: the message's elements split over the ranks (rounded down), at least 1. */
    static long outputElements(long bytes, int ranks) {
        return Math.max(1, elements(bytes) / ranks);
    }
}
