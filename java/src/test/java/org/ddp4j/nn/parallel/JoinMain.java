package org.ddp4j.nn.parallel;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.ddp4j.nn.MSELoss;
import org.ddp4j.optim.SGD;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;
import org.ddp4j.distributed.Distributed;
import org.ddp4j.distributed.DistributedException;
import org.ddp4j.distributed.DistributedTimeoutException;
import org.ddp4j.distributed.ProcessGroup;

/**
 * A rank process for {@link JoinMultiProcessTest}: args {@code join|nojoin}, the batches of each
 * rank (e.g. {@code 3,4,5}), {@code unused|all} (whether heads c and d follow
 * {@link UnevenTraining.Heads}'s pattern). Trains {@link UnevenTraining.Heads} in DDP with SGD
 * (momentum, weight decay), printing after each backward {@code nullgrads rank=R step=S [names]},
 * then {@code param rank=R name=v,...} for each final parameter and exits 0. Without join, calls
 * a barrier after the loop (what a script does before saving); {@code nojoin-exit} exits instead. {@code joinbn} trains a
 * Conv2d-BatchNorm2d-Linear model instead (buffers broadcast each forward; {@code joinsyncbn}: with SyncBatchNorm) and prints
 * {@code state rank=R name=v,...} for its whole state dict ({@code nojoinbn}: the same without join).
 * {@code syncbn-timeout} and {@code join-timeout}: rank 1 sleeps past the timeout while rank 0 is in a
 * SyncBatchNorm forward, or shadows it inside join(). A DistributedException prints
 * {@code failed rank=R: MESSAGE} and {@code failedfacts rank=R: CLASS waitedFor=RANK op=OP} (RANK -2:
 * not a timeout) and exits 3; anything else exits 2.
 */
public final class JoinMain {
    private JoinMain() {}

    public static void main(String[] args) {
        int rank = -1;
        int exit;
        try {
            boolean join = args[0].startsWith("join");
            String[] counts = args[1].split(",");
            boolean pattern = args[2].equals("unused");
            ProcessGroup group = Distributed.initProcessGroup("gloo");
            rank = group.rank();
            int batches = Integer.parseInt(counts[rank]);
            if (args[0].equals("joinbn") || args[0].equals("joinsyncbn") || args[0].equals("nojoinbn")) {
                trainWithBuffers(rank, batches, args[0].equals("joinsyncbn"), join);
                System.out.flush();
                System.exit(0);
            }
            if (args[0].equals("syncbn-timeout")) {
                syncBatchNormWhilePeerSleeps(rank);
            }
            if (args[0].equals("join-timeout")) {
                joinWhilePeerSleeps(rank, batches);
            }
            UnevenTraining.Heads model = new UnevenTraining.Heads();
            DistributedDataParallel ddp = new DistributedDataParallel(model);
            SGD opt = UnevenTraining.optimizer(ddp.parameters());
            if (join) {
                try (var j = ddp.join()) {
                    train(ddp, model, opt, rank, batches, pattern);
                }
            } else {
                train(ddp, model, opt, rank, batches, pattern);
                if (!args[0].equals("nojoin-exit")) {
                    Distributed.barrier();
                }
            }
            for (Map.Entry<String, Tensor> e : model.namedParameters().entrySet()) {
                System.out.println("param rank=" + rank + " " + UnevenTraining.format(e.getKey(), e.getValue().toFloatArray()));
            }
            exit = 0;
        } catch (DistributedException e) {
            System.out.println("failed rank=" + rank + ": " + e.getMessage());
            int waited = e instanceof DistributedTimeoutException t ? t.waitedForRank() : -2;
            System.out.println("failedfacts rank=" + rank + ": " + e.getClass().getSimpleName() + " waitedFor=" + waited
                    + " op=" + e.op());
            exit = 3;
        } catch (Throwable e) {
            System.out.println("error rank=" + rank + ": " + e);
            e.printStackTrace(System.out);
            exit = 2;
        }
        System.out.flush();
        System.exit(exit);
    }

    /**
     * A SyncBatchNorm layer's forward on rank 0 while rank 1 sleeps past the group's timeout and then
     * exits: rank 0's statistics all-gather times out.
     */
    private static void syncBatchNormWhilePeerSleeps(int rank) throws InterruptedException {
        if (rank == 1) {
            Thread.sleep(Long.parseLong(System.getenv("DDP4J_TIMEOUT_SECONDS")) * 3000);
            System.exit(0);
        }
        org.ddp4j.nn.SyncBatchNorm bn = new org.ddp4j.nn.SyncBatchNorm(2);
        bn.forward(Tensor.of(new org.ddp4j.tensor.Generator(1).normal(32), 2, 2, 2, 4));
    }

    /**
     * Inside join(): rank 0 runs out of data at once and shadows rank 1's collectives, while rank 1
     * sleeps past the group's timeout in its second step: rank 0's shadowing times out.
     */
    private static void joinWhilePeerSleeps(int rank, int batches) throws InterruptedException {
        UnevenTraining.Heads model = new UnevenTraining.Heads();
        DistributedDataParallel ddp = new DistributedDataParallel(model);
        SGD opt = UnevenTraining.optimizer(ddp.parameters());
        MSELoss loss = new MSELoss();
        try (var j = ddp.join()) {
            for (int step = 0; step < batches; step++) {
                if (rank == 1 && step == 1) {
                    Thread.sleep(Long.parseLong(System.getenv("DDP4J_TIMEOUT_SECONDS")) * 3000);
                    System.exit(0);
                }
                try (var scope = Tensors.scope()) {
                    opt.zeroGrad();
                    loss.forward(ddp.forward(UnevenTraining.input(rank, step)), UnevenTraining.target(rank, step))
                            .backward();
                }
                opt.step();
            }
        }
    }

    /**
     * A model with buffers (BatchNorm's running statistics, or SyncBatchNorm's with {@code sync}),
     * trained inside a join, or without one ({@code join} false: a rank with fewer batches exits while
     * the others' next forward broadcasts the buffers).
     */
    private static void trainWithBuffers(int rank, int batches, boolean sync, boolean join) {
        org.ddp4j.tensor.Generator g = new org.ddp4j.tensor.Generator(3);
        org.ddp4j.nn.Module model = new org.ddp4j.nn.Sequential(new org.ddp4j.nn.Conv2d(1, 2, 3, 1, 1, true, g),
                new org.ddp4j.nn.BatchNorm2d(2), new org.ddp4j.nn.Flatten(), new org.ddp4j.nn.Linear(32, 2, true, g));
        if (sync) {
            model = org.ddp4j.nn.SyncBatchNorm.convertSyncBatchnorm(model);
        }
        DistributedDataParallel ddp = new DistributedDataParallel(model);
        SGD opt = UnevenTraining.optimizer(ddp.parameters());
        MSELoss loss = new MSELoss();
        try (var j = join ? ddp.join() : null) {
            for (int step = 0; step < batches; step++) {
                try (var scope = Tensors.scope()) {
                    opt.zeroGrad();
                    Tensor x = Tensor.of(new org.ddp4j.tensor.Generator(100L * rank + step).normal(32), 2, 1, 4, 4);
                    loss.forward(ddp.forward(x), UnevenTraining.target(rank, step)).backward();
                }
                opt.step();
            }
        }
        for (Map.Entry<String, Tensor> e : model.stateDict().entrySet()) {
            Tensor t = e.getValue();
            float[] v = t.dtype() == org.ddp4j.tensor.DType.FLOAT32 ? t.toFloatArray()
                    : new float[] {t.toLongArray()[0]};
            System.out.println("state rank=" + rank + " " + UnevenTraining.format(e.getKey(), v));
        }
    }

    private static void train(DistributedDataParallel ddp, UnevenTraining.Heads model, SGD opt, int rank, int batches,
            boolean pattern) {
        MSELoss loss = new MSELoss();
        for (int step = 0; step < batches; step++) {
            model.use(rank, step, pattern);
            try (var scope = Tensors.scope()) {
                opt.zeroGrad();
                loss.forward(ddp.forward(UnevenTraining.input(rank, step)), UnevenTraining.target(rank, step)).backward();
            }
            List<String> nulls = new ArrayList<>();
            model.namedParameters().forEach((name, p) -> {
                if (p.grad() == null) {
                    nulls.add(name);
                }
            });
            System.out.println("nullgrads rank=" + rank + " step=" + step + " " + nulls);
            opt.step();
        }
    }
}
