package org.ddp4j.benchmarks.collective;

import org.ddp4j.distributed.ProcessGroup;

/** A barrier: latency only (no message, so no bandwidth columns). */
public class BarrierBenchmark extends CollectiveBenchmark {
    @Override
    protected void prepare(ProcessGroup group, long bytes) {}

    @Override
    protected void run(ProcessGroup group) {
        group.barrier().awaitBlocking();
    }

    @Override
    protected void release() {}

    @Override
    public boolean sized() {
        return false;
    }

    @Override
    public double busBandwidthFactor(int ranks) {
        return 0;
    }
}
