package org.ddp4j.benchmarks.collective;

import org.ddp4j.distributed.ProcessGroup;
import org.ddp4j.distributed.ReduceOp;
import org.ddp4j.tensor.Tensor;

/**
 * Reduce (SUM) to rank 0 of a float32 tensor of {@link #bytes}: nccl-tests' reduce_perf, size =
 * the tensor, busbw = algbw. Mirrors {@code dist.reduce(t, dst=0)}. On Gloo ddp4j runs it as an
 * all-reduce, so expect an all-reduce's time.
 */
public class ReduceBenchmark extends CollectiveBenchmark {
    private Tensor tensor;

    @Override
    protected void prepare(ProcessGroup group, long bytes) {
        tensor = onDevice(Tensor.ones(elements(bytes)), group.device());
    }

    @Override
    protected void run(ProcessGroup group) {
        // Rank 0's values grow by n per call until inf, as in AllReduceBenchmark: inf adds as fast as any normal float.
        group.reduce(tensor, 0, ReduceOp.SUM).awaitBlocking();
    }

    @Override
    protected void release() {
        tensor.close();
    }

    @Override
    public String redop() {
        return "sum";
    }
}
