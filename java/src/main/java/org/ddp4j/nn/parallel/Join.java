package org.ddp4j.nn.parallel;

import java.util.Collection;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;
import org.ddp4j.distributed.ProcessGroup;
import org.ddp4j.distributed.ReduceOp;

/**
 * The scope returned by {@link DistributedDataParallel#join()}: training with uneven inputs.
 * Mirrors PyTorch's {@code torch.distributed.algorithms.Join} with DDP's {@code _DDPJoinHook}.
 *
 * <p>A rank that reaches {@link #close()} (its loader ended) shadows the ranks still training,
 * one iteration at a time, issuing the same collectives with zeros: the bucket re-layout if it is
 * due, the choice of the broadcasting rank and the buffer broadcast (modules with buffers), then
 * every gradient bucket in launch order. PyTorch all-reduces a separate "still training" count
 * every iteration; here that count is a flag inside bucket 0's own all-reduce (see
 * {@link ReducerBucket}), so a training step pays no extra collective. When bucket 0 shows no
 * rank training, every rank is in close(); the highest of the ranks that joined last (they hold
 * the model trained to the end) broadcasts parameters and buffers to all, and close() returns.
 *
 * <p>Each wait is bounded by the group's timeout. Every rank must open the join around the same
 * loop and run one training forward per backward inside it (the joined ranks shadow exactly one
 * forward's and one backward's collectives per iteration); {@code noSync()} is refused inside it.
 * Unlike PyTorch there is no {@code throw_on_early_termination}: gradients of the ranks still
 * training are divided by the full world size, PyTorch's default. If the loop body throws, close()
 * still shadows, so the other ranks finish or the group's timeout ends it. Not thread-safe: the
 * training thread opens and closes it.
 */
@SuppressWarnings("deprecation") // extends its old home, so that code typed with the old import still compiles
public final class Join extends org.ddp4j.distributed.Join {
    private final DistributedDataParallel ddp;
    private boolean closed;

    Join(DistributedDataParallel ddp) {
        this.ddp = ddp;
    }

    /**
     * Shadows the other ranks' iterations until every rank has joined, then gives every rank the
     * model of the last rank to join. Returns at once at world size one. Idempotent.
     *
     * @throws DistributedException if a collective fails (a peer died, or called something else)
     * @throws DistributedTimeoutException if a peer does not come within the group's timeout
     */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        try {
            Reducer reducer = ddp.reducer();
            if (!reducer.communicates()) {
                return;
            }
            ProcessGroup group = ddp.processGroup();
            Collection<Tensor> buffers = ddp.module().namedBuffers().values();
            int shadowed = 0;
            while (true) {
                // The collectives of the others' forward, in the same order.
                if (ddp.isTraining()) {
                    reducer.rebuildBucketsIfReady(false);
                }
                if (ddp.isTraining() && !buffers.isEmpty()) {
                    int root = highestRankWhere(group, false);
                    if (root < 0) {
                        break;
                    }
                    ddp.broadcastState(buffers, root);
                }
                if (!reducer.shadowBackward()) {
                    break;
                }
                shadowed++;
            }
            int lastToJoin = highestRankWhere(group, shadowed == 0);
            ddp.broadcastState(ddp.module().stateDict().values(), lastToJoin);
        } catch (RuntimeException e) {
            throw Reducer.insideJoinHint(e); // e.g. a SyncBatchNorm collective the shadowing cannot match
        } finally {
            ddp.joinClosed();
        }
    }

    /**
     * The highest rank whose {@code flag} is true, or -1 if none: one all-reduce (SUM) of a
     * world-sized vector in which each rank sets its own element. Every rank must call it.
     */
    static int highestRankWhere(ProcessGroup group, boolean flag) {
        try (var scope = Tensors.scope()) {
            float[] mine = new float[group.size()];
            mine[group.rank()] = flag ? 1f : 0f;
            Tensor t = Tensor.of(mine, mine.length).to(group.device());
            group.allReduce(t, ReduceOp.SUM).await();
            float[] all = t.toFloatArray();
            for (int r = all.length - 1; r >= 0; r--) {
                if (all[r] != 0f) {
                    return r;
                }
            }
            return -1;
        }
    }
}
