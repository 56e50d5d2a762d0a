package org.ddp4j.benchmarks.collective;

import org.ddp4j.distributed.ProcessGroup;
import org.ddp4j.distributed.ReduceOp;
import org.ddp4j.tensor.Tensor;

/** All-reduce (SUM) of a float32 tensor of {@link #bytes}: nccl-tests' all_reduce_perf, busbw = algbw x 2(n-1)/n. */
public class AllReduceBenchmark extends CollectiveBenchmark {
    private Tensor tensor;

    @Override
    protected void prepare(ProcessGroup group, long bytes) {
        tensor = onDevice(Tensor.ones(elements(bytes)), group.device());
    }

    @Override
    protected void run(ProcessGroup group) {
        // Summing in place multiplies the values by n per call until they reach inf: as benchmarks/pytorch/allreduce_bench.py does,
        // and inf costs the same to add as any normal float (only denormals are slow).
        group.allReduce(tensor, ReduceOp.SUM).awaitBlocking();
    }

    @Override
    protected void release() {
        tensor.close();
    }

    @Override
    public String redop() {
        return "sum";
    }

    @Override
    public double busBandwidthFactor(int ranks) {
        return 2.0 * (ranks - 1) / ranks;
    }
}
