package org.ddp4j.nn.parallel;

import org.ddp4j.distributed.Distributed;
import org.ddp4j.distributed.DistributedException;
import org.ddp4j.distributed.ProcessGroup;
import org.ddp4j.nn.Linear;
import org.ddp4j.nn.MSELoss;
import org.ddp4j.nn.ReLU;
import org.ddp4j.nn.Sequential;
import org.ddp4j.optim.SGD;
import org.ddp4j.tensor.Generator;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;

/**
 * A rank process for {@link PeerKilledDuringBackwardTest} and {@link PeerKilledAmongManyTest}: trains a small MLP
 * in DDP for 3 steps. The victim (the first argument, rank 1 without one) prints {@code pid rank=V P}, and in its
 * second backward, when the first layer's gradient is ready (before DDP's hook
 * sees it, so its bucket is never launched), sends itself SIGKILL. A DistributedException prints
 * {@code failed rank=R: MESSAGE}, then {@code failedfacts rank=R: PeerLostException reason=R peer=P pid=PID} (or
 * the exception's class) and exits 3; finishing exits 0; anything else exits 2.
 */
public final class PeerKilledMain {
    private PeerKilledMain() {}

    public static void main(String[] args) throws Exception {
        int rank = -1;
        int exit;
        try {
            ProcessGroup group = Distributed.initProcessGroup("gloo");
            rank = group.rank();
            int victim = args.length > 0 && !args[0].isEmpty() ? Integer.parseInt(args[0]) : 1;
            Generator g = new Generator(7);
            Linear first = new Linear(4, 8, true, g);
            Sequential model = new Sequential(first, new ReLU(), new Linear(8, 2, true, g));
            int[] backwards = {0};
            if (rank == victim) {
                long pid = ProcessHandle.current().pid();
                System.out.println("pid rank=" + rank + " " + pid);
                System.out.flush();
                // Registered before DDP's own hooks, so it runs first: DDP never launches this bucket.
                first.weight().registerPostAccumulateGradHook(grad -> {
                    if (++backwards[0] == 2) {
                        killSelf(pid);
                    }
                });
            }
            DistributedDataParallel ddp = new DistributedDataParallel(model);
            SGD opt = new SGD(ddp.parameters(), 0.1);
            MSELoss loss = new MSELoss();
            for (int step = 0; step < 3; step++) {
                try (var scope = Tensors.scope()) {
                    opt.zeroGrad();
                    Tensor x = Tensor.of(new Generator(10L * rank + step).normal(8), 2, 4);
                    loss.forward(ddp.forward(x), Tensor.zeros(2, 2)).backward();
                }
                opt.step();
                System.out.println("step rank=" + rank + " " + step);
            }
            exit = 0;
        } catch (DistributedException e) {
            System.out.println("failed rank=" + rank + ": " + e.getMessage());
            System.out.println("failedfacts rank=" + rank + ": " + (e instanceof org.ddp4j.distributed.PeerLostException p
                    ? "PeerLostException reason=" + p.reason() + " peer=" + p.peerRank() + " pid=" + p.peerPid()
                    : e.getClass().getSimpleName()));
            exit = 3;
        } catch (Throwable e) {
            System.out.println("error rank=" + rank + ": " + e);
            e.printStackTrace(System.out);
            exit = 2;
        }
        System.out.flush();
        System.exit(exit);
    }

    /** SIGKILL to this process (Java refuses to destroy the current process); never returns. */
    private static void killSelf(long pid) {
        try {
            new ProcessBuilder("kill", "-KILL", Long.toString(pid)).inheritIO().start().waitFor();
            Thread.sleep(60_000);
        } catch (Exception e) {
            throw new IllegalStateException("could not kill this process", e);
        }
        throw new IllegalStateException("still alive 60 s after SIGKILL");
    }
}
