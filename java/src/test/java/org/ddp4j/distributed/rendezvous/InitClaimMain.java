package org.ddp4j.distributed.rendezvous;

import org.ddp4j.distributed.Distributed;
import org.ddp4j.distributed.ProcessGroup;

/**
 * A worker that only joins the default group through env:// and leaves: prints {@code init ok
 * rank=R} and exits 0, or prints {@code init failed after N ms: MESSAGE} and exits 2.
 */
public final class InitClaimMain {
    private InitClaimMain() {}

    public static void main(String[] args) {
        long t0 = System.nanoTime();
        try {
            ProcessGroup g = Distributed.initProcessGroup("gloo");
            System.out.println("init ok rank=" + g.rank());
            Distributed.destroyProcessGroup();
        } catch (RuntimeException e) {
            System.out.println("init failed after " + (System.nanoTime() - t0) / 1_000_000 + " ms: " + e.getMessage());
            System.out.flush();
            System.exit(2);
        }
    }
}
