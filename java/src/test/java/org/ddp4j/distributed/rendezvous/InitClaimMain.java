package org.ddp4j.distributed.rendezvous;

import java.nio.file.Files;
import java.nio.file.Path;
import org.ddp4j.distributed.Distributed;
import org.ddp4j.distributed.ProcessGroup;
import org.ddp4j.tensor.Tensor;

/**
 * A worker that only joins the default group through env:// and leaves: prints {@code init ok
 * rank=R} and exits 0, or prints {@code init failed after N ms: MESSAGE} and exits 2. With
 * {@code hold FILE} it stays in the job after its init (a running job) until FILE exists (at most
 * 120 s), then all-reduces its rank + 1 and prints {@code sum=S}.
 */
public final class InitClaimMain {
    private InitClaimMain() {}

    public static void main(String[] args) throws Exception {
        long t0 = System.nanoTime();
        ProcessGroup g;
        try {
            g = Distributed.initProcessGroup("gloo");
            System.out.println("init ok rank=" + g.rank());
            System.out.flush();
        } catch (RuntimeException e) {
            System.out.println("init failed after " + (System.nanoTime() - t0) / 1_000_000 + " ms: " + e.getMessage());
            System.out.flush();
            System.exit(2);
            return;
        }
        if (args.length == 2 && args[0].equals("hold")) {
            long end = System.nanoTime() + 120_000_000_000L;
            while (!Files.exists(Path.of(args[1])) && System.nanoTime() < end) {
                Thread.sleep(50);
            }
            try (Tensor t = Tensor.of(new float[] {g.rank() + 1}, 1)) {
                Distributed.allReduce(t);
                System.out.println("sum=" + t.toFloatArray()[0]);
            }
        }
        Distributed.destroyProcessGroup();
    }
}
