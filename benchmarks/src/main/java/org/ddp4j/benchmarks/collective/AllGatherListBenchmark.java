package org.ddp4j.benchmarks.collective;

import java.util.List;
import java.util.stream.IntStream;
import org.ddp4j.distributed.ProcessGroup;
import org.ddp4j.tensor.Tensor;

/**
 * All-gather into a list of tensors ({@code all_gather(tensor_list, tensor)}), and docs/performance.md's
 * example of a user's own {@link CollectiveBenchmark}: run it with {@code CollectiveBench
 * --benchmark org.ddp4j.benchmarks.collective.AllGatherListBenchmark}. Sizes as
 * {@link AllGatherBenchmark}.
 */
public class AllGatherListBenchmark extends CollectiveBenchmark {
    private Tensor in;
    private List<Tensor> outs;

    @Override
    protected void prepare(ProcessGroup group, long bytes) {
        in = onDevice(Tensor.ones(elements(bytes)), group.device());
        outs = IntStream.range(0, group.size()).mapToObj(r -> onDevice(Tensor.zeros(elements(bytes)), group.device())).toList();
    }

    @Override
    protected void run(ProcessGroup group) {
        group.allGather(outs, in).awaitBlocking();
    }

    @Override
    protected void release() {
        in.close();
        outs.forEach(Tensor::close);
    }

    @Override
    public double busBandwidthFactor(int ranks) {
        return (ranks - 1.0) / ranks; // nccl-tests' factor for all-gather
    }

    @Override
    public long reportedBytes(long bytes, int ranks) {
        return elements(bytes) * Float.BYTES * ranks;
    }
}
