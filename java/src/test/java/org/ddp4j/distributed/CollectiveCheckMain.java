package org.ddp4j.distributed;

import java.util.Arrays;
import org.ddp4j.tensor.Tensor;

/**
 * A worker for multi-process collective tests: joins the default group through env://
 * (MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK, as set by a test or by scripts/ddp4j-run), sums
 * {@code [rank + 1, rank + 1, rank + 1, rank + 1]} over all ranks, and prints
 * {@code allreduce ok rank=R sum=S} (S = W(W+1)/2 for world size W). Exits 1 on a wrong result,
 * 2 on an error.
 */
public final class CollectiveCheckMain {
    private CollectiveCheckMain() {}

    /** Runs the check; arguments are ignored. Exits 0 on success, 1 on a wrong sum, 2 on an error. */
    public static void main(String[] args) {
        int exit = 0;
        try {
            ProcessGroup group = Distributed.initProcessGroup("gloo");
            int rank = group.rank();
            int world = group.size();
            float[] values = new float[4];
            Arrays.fill(values, rank + 1);
            float[] got;
            try (Tensor t = Tensor.of(values, values.length)) {
                Distributed.allReduce(t, ReduceOp.SUM).await();
                got = t.toFloatArray();
            }
            long expected = (long) world * (world + 1) / 2;
            boolean ok = true;
            for (float v : got) {
                ok &= v == expected;
            }
            if (ok) {
                System.out.println("allreduce ok rank=" + rank + " sum=" + expected);
            } else {
                System.out.println("allreduce WRONG rank=" + rank + " got=" + Arrays.toString(got) + " expected=" + expected);
                exit = 1;
            }
            Distributed.barrier().await();
            Distributed.destroyProcessGroup();
        } catch (Throwable e) {
            System.out.println("allreduce FAILED: " + e);
            e.printStackTrace(System.out);
            exit = 2;
        }
        System.out.flush();
        System.exit(exit);
    }
}
