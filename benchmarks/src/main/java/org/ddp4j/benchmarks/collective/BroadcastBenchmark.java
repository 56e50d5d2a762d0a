package org.ddp4j.benchmarks.collective;

import org.ddp4j.distributed.ProcessGroup;
import org.ddp4j.tensor.Tensor;

/** Broadcast from rank 0 of a float32 tensor of {@link #bytes}: nccl-tests' broadcast_perf, busbw = algbw. */
public class BroadcastBenchmark extends CollectiveBenchmark {
    private Tensor tensor;

    @Override
    protected void prepare(ProcessGroup group, long bytes) {
        tensor = onDevice(Tensor.ones(elements(bytes)), group.device());
    }

    @Override
    protected void run(ProcessGroup group) {
        group.broadcast(tensor, 0).awaitBlocking();
    }

    @Override
    protected void release() {
        tensor.close();
    }
}
