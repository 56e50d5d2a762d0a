package org.ddp4j.distributed;

import org.ddp4j.tensor.Tensor;

/**
 * A worker for {@link ShmKillTest}: joins the default group through env://, prints
 * {@code transport=T rank=R}, then all-reduces a 64 MiB float32 tensor in a loop, printing
 * {@code looping rank=R} once the first one is done. When a collective fails it prints
 * {@code caught rank=R ms=M class=C: message} (M: milliseconds from the failing call to the
 * exception) and exits 0; it exits 2 on any other error and 3 after {@value #LIMIT_SECONDS} s.
 */
public final class ShmKillMain {
    static final int LIMIT_SECONDS = 90;

    private ShmKillMain() {}

    public static void main(String[] args) {
        Thread watchdog = new Thread(() -> {
            try {
                Thread.sleep(LIMIT_SECONDS * 1000L);
            } catch (InterruptedException e) {
                return;
            }
            System.out.println("HUNG rank=" + System.getenv("RANK"));
            System.out.flush();
            Runtime.getRuntime().halt(3);
        }, "watchdog");
        watchdog.setDaemon(true);
        watchdog.start();
        int rank = -1;
        try {
            ProcessGroup group = Distributed.initProcessGroup("gloo");
            rank = group.rank();
            System.out.println("transport=" + ((ProcessGroupGloo) group).transport() + " rank=" + rank);
            try (Tensor t = Tensor.zeros(16L << 20)) {
                for (int i = 0; ; i++) {
                    long start = System.nanoTime();
                    try {
                        Distributed.allReduce(t, ReduceOp.SUM);
                    } catch (DistributedException e) {
                        long ms = (System.nanoTime() - start) / 1_000_000;
                        System.out.println("caught rank=" + rank + " ms=" + ms + " class=" + e.getClass().getSimpleName()
                                + ": " + e.getMessage());
                        System.out.flush();
                        Runtime.getRuntime().halt(0);
                    }
                    if (i == 0) {
                        System.out.println("looping rank=" + rank);
                        System.out.flush();
                    }
                }
            }
        } catch (Throwable e) {
            System.out.println("FAILED rank=" + rank + ": " + e);
            e.printStackTrace(System.out);
            System.out.flush();
            Runtime.getRuntime().halt(2);
        }
    }
}
