package org.ddp4j.debug;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.ddp4j.distributed.Distributed;
import org.ddp4j.distributed.ReduceOp;
import org.ddp4j.tensor.Tensor;

/**
 * One rank of {@link DumpRequestTest}: five all-reduces, a barrier and a send of 3 floats from
 * rank 0 to rank 1, then rank 0 touches
 * {@code DDP4J_DEBUG_DIR/ddp4j-dump-request} and every rank waits (at most 30 s) for its own dump
 * before leaving through a second barrier.
 */
public final class DumpRequestMain {
    private DumpRequestMain() {}

    public static void main(String[] args) throws Exception {
        Distributed.initProcessGroup("gloo");
        int rank = Distributed.getRank();
        for (int i = 0; i < 5; i++) {
            try (Tensor t = Tensor.of(new float[] {rank, i}, 2)) {
                Distributed.allReduce(t, ReduceOp.SUM);
            }
        }
        Distributed.barrier();
        try (Tensor t = Tensor.of(new float[] {1, 2, 3}, 3)) {
            if (rank == 0) {
                Distributed.send(t, 1);
            } else {
                Distributed.recv(t, 0);
            }
        }
        Path dir = Path.of(System.getenv("DDP4J_DEBUG_DIR"));
        if (rank == 0) {
            Files.writeString(dir.resolve(FlightRecorderDump.REQUEST_FILE), "");
        }
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (!Files.exists(FlightRecorderDump.file(dir, rank)) && System.nanoTime() < deadline) {
            Thread.sleep(50);
        }
        Distributed.barrier();
        Distributed.destroyProcessGroup();
    }
}
