package org.ddp4j.benchmarks.collective;

import org.ddp4j.distributed.ProcessGroup;
import org.ddp4j.tensor.Tensor;

/**
 * All-gather into one tensor: each rank contributes {@link #bytes}, the output holds n times that.
 * As nccl-tests' all_gather_perf, the reported size is the whole output and busbw = algbw x (n-1)/n.
 */
public class AllGatherBenchmark extends CollectiveBenchmark {
    private Tensor input;
    private Tensor output;

    @Override
    protected void prepare(ProcessGroup group, long bytes) {
        long count = elements(bytes);
        input = onDevice(Tensor.ones(count), group.device());
        output = onDevice(Tensor.zeros(count * group.size()), group.device());
    }

    @Override
    protected void run(ProcessGroup group) {
        group.allGatherIntoTensor(output, input).awaitBlocking();
    }

    @Override
    protected void release() {
        input.close();
        output.close();
    }

    @Override
    public double busBandwidthFactor(int ranks) {
        return (ranks - 1.0) / ranks;
    }

    @Override
    public long reportedBytes(long bytes, int ranks) {
        return elements(bytes) * Float.BYTES * ranks;
    }
}
