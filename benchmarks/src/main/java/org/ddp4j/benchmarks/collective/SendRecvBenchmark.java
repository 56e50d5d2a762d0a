package org.ddp4j.benchmarks.collective;

import org.ddp4j.distributed.ProcessGroup;
import org.ddp4j.distributed.Work;
import org.ddp4j.tensor.Tensor;

/**
 * Point-to-point ring: each rank {@code isend}s a float32 tensor of {@link #bytes} to rank + 1 and
 * {@code irecv}s as much from rank - 1 (mod n), then awaits both. nccl-tests' sendrecv_perf: size
 * = the tensor, busbw = algbw. Needs at least 2 ranks.
 */
public class SendRecvBenchmark extends CollectiveBenchmark {
    private Tensor outgoing;
    private Tensor incoming;

    @Override
    protected void prepare(ProcessGroup group, long bytes) {
        if (group.size() < minimumRanks()) {
            throw new IllegalStateException(tooFewRanks(group.size()));
        }
        outgoing = onDevice(Tensor.ones(elements(bytes)), group.device());
        incoming = onDevice(Tensor.zeros(elements(bytes)), group.device());
    }

    @Override
    protected void run(ProcessGroup group) {
        int n = group.size();
        // Both started before either is awaited: every rank sends first, as nccl-tests' ring does.
        Work send = group.send(outgoing, (group.rank() + 1) % n);
        Work recv = group.recv(incoming, (group.rank() + n - 1) % n);
        send.awaitBlocking();
        recv.awaitBlocking();
    }

    @Override
    protected void release() {
        // prepare may have thrown before allocating
        if (outgoing != null) {
            outgoing.close();
        }
        if (incoming != null) {
            incoming.close();
        }
    }

    @Override
    public int minimumRanks() {
        return 2;
    }

    @Override
    public String tooFewRanks(int ranks) {
        return "sendrecv needs at least 2 ranks (each rank sends to rank + 1 and receives from rank - 1, and a rank"
                + " cannot send to itself), but this job has " + ranks + " (WORLD_SIZE): launch it with"
                + " scripts/ddp4j-run --nproc-per-node 2 or more";
    }
}
