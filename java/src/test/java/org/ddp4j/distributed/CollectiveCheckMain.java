package org.ddp4j.distributed;

import java.util.Arrays;
import org.ddp4j.tensor.Tensor;

/**
 * A worker for multi-process collective tests: joins the default group through env://
 * (MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK, as set by a test or by scripts/ddp4j-run), sums
 * {@code [rank + 1, rank + 1, rank + 1, rank + 1]} over all ranks, and prints
 * {@code allreduce ok rank=R sum=S} (S = W(W+1)/2 for world size W). It reads every result right
 * after the blocking call returns (no await), which is what {@code Distributed}'s blocking
 * collectives promise, and checks the async variants, broadcast and all-gather the same way.
 * Exits 1 on a wrong result, 2 on an error, 3 when it has not finished after
 * {@value #HANG_LIMIT_SECONDS} s (printing {@code allreduce HUNG rank=R} and where it is stuck).
 */
public final class CollectiveCheckMain {
    /** Below the tests' own bounds on the process (LauncherProcess: 240 s), so the hung rank names itself. */
    static final int HANG_LIMIT_SECONDS = 120;

    private CollectiveCheckMain() {}

    /** Async all-reduce, broadcast and all-gather into a tensor, each read as soon as it returns. */
    private static boolean checkOthers(int rank, int world) {
        boolean ok = true;
        try (Tensor t = Tensor.of(new float[] {rank}, 1)) {
            Distributed.allReduceAsync(t, ReduceOp.MAX).await();
            ok &= t.toFloatArray()[0] == world - 1;
            t.fill(rank + 10);
            Distributed.broadcast(t, world - 1);
            ok &= t.toFloatArray()[0] == world - 1 + 10;
            try (Tensor in = Tensor.of(new float[] {rank * 2}, 1); Tensor out = Tensor.zeros(world)) {
                float[] gathered = Distributed.allGatherIntoTensor(out, in).toFloatArray();
                for (int r = 0; r < world; r++) {
                    ok &= gathered[r] == r * 2;
                }
            }
        }
        if (!ok) {
            System.out.println("collectives WRONG rank=" + rank);
        }
        return ok;
    }

    /** Under the launcher the group timeout defaults to 30 min: a hung rank reports itself and exits long before. */
    private static void startWatchdog() {
        Thread main = Thread.currentThread();
        Thread watchdog = new Thread(() -> {
            try {
                Thread.sleep(HANG_LIMIT_SECONDS * 1000L);
            } catch (InterruptedException e) {
                return;
            }
            StringBuilder where = new StringBuilder();
            for (StackTraceElement frame : main.getStackTrace()) {
                where.append("\n    at ").append(frame);
            }
            System.out.println("allreduce HUNG rank=" + System.getenv("RANK") + ": not finished after "
                    + HANG_LIMIT_SECONDS + " s; main is at:" + where);
            System.out.flush();
            Runtime.getRuntime().halt(3);
        }, "hang-watchdog");
        watchdog.setDaemon(true);
        watchdog.start();
    }

    /** Runs the check; arguments are ignored. Exits 0 on success, 1 on a wrong sum, 2 on an error, 3 on a hang. */
    public static void main(String[] args) {
        startWatchdog();
        int exit = 0;
        try {
            ProcessGroup group = Distributed.initProcessGroup("gloo");
            int rank = group.rank();
            int world = group.size();
            float[] values = new float[4];
            Arrays.fill(values, rank + 1);
            float[] got;
            try (Tensor t = Tensor.of(values, values.length)) {
                Distributed.allReduce(t, ReduceOp.SUM);
                got = t.toFloatArray();
            }
            long expected = (long) world * (world + 1) / 2;
            boolean ok = true;
            for (float v : got) {
                ok &= v == expected;
            }
            ok &= checkOthers(rank, world);
            if (ok) {
                System.out.println("allreduce ok rank=" + rank + " sum=" + expected);
            } else {
                System.out.println("allreduce WRONG rank=" + rank + " got=" + Arrays.toString(got) + " expected=" + expected);
                exit = 1;
            }
            Distributed.barrier();
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
