package org.ddp4j.distributed;

import org.ddp4j.nn.Linear;
import org.ddp4j.tensor.Generator;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;
import org.ddp4j.nn.parallel.DistributedDataParallel;

/**
 * A worker for the multi-process version of the mismatched-collective scenario: joins the default group through
 * env://, wraps a Linear(16, 4) in DDP, then rank 1 all-reduces a 1-element metric while every
 * other rank runs a DDP backward. Prints {@code mismatch caught rank=R: MESSAGE} and exits 0 when
 * the collective fails with a DistributedException; prints {@code mismatch MISSED rank=R} and
 * exits 1 when it returns; exits 2 on any other error.
 */
public final class FingerprintMismatchMain {
    private FingerprintMismatchMain() {}

    public static void main(String[] args) {
        int exit;
        int rank = -1;
        try {
            ProcessGroup group = Distributed.initProcessGroup("gloo");
            rank = group.rank();
            try (DistributedDataParallel ddp = new DistributedDataParallel(new Linear(16, 4, true, new Generator(rank)));
                    var scope = Tensors.scope()) {
                if (rank == 1) {
                    Distributed.allReduce(Tensor.of(new float[] {0.25f}, 1), ReduceOp.SUM);
                } else {
                    ddp.forward(Tensor.ones(2, 16)).sum().backward();
                }
                System.out.println("mismatch MISSED rank=" + rank);
                exit = 1;
            } catch (DistributedException e) {
                System.out.println("mismatch caught rank=" + rank + ": " + e.getMessage());
                exit = 0;
            }
        } catch (Throwable e) {
            System.out.println("mismatch FAILED rank=" + rank + ": " + e);
            e.printStackTrace(System.out);
            exit = 2;
        }
        System.out.flush();
        System.exit(exit);
    }
}
