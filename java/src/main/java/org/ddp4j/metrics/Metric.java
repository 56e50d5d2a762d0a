package org.ddp4j.metrics;

import java.util.ArrayList;
import java.util.List;
import org.ddp4j.distributed.Distributed;
import org.ddp4j.distributed.ProcessGroup;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;

/**
 * A metric accumulated on each rank and combined over the ranks when computed, as torchmetrics'
 * {@code Metric}: {@code update(...)} on every batch (local, no communication), {@code compute()}
 * once (one all-gather over the group; every rank of the group must call it), {@code reset()} to
 * start again. Without a process group (none given and none initialised) it computes over this
 * process alone.
 *
 * <p>The state is a few sums, combined in double precision: each rank's sums travel as float32
 * pairs (high part, remainder), exact to 48 bits, and are added in rank order, so every rank gets
 * the same value, equal to one process's over all the samples up to double rounding.
 */
public abstract class Metric {
    private final ProcessGroup group;

    /** @param group the ranks to combine over, or null for the default group (when initialised) */
    protected Metric(ProcessGroup group) {
        this.group = group;
    }

    /** This rank's sums (the metric's state), in a fixed order. */
    protected abstract double[] localState();

    /** The metric from the sums over every rank, in localState's order. */
    protected abstract double computeFrom(double[] totals);

    /** Clears the state. Mirrors {@code Metric.reset()}. */
    public abstract void reset();

    /**
     * The metric over every rank's updates since the last reset. Mirrors {@code Metric.compute()}
     * (with {@code dist_sync_on_step=False}: one synchronisation here).
     *
     * @throws org.ddp4j.distributed.DistributedException if the ranks' collective fails (e.g. a rank
     *     did not call compute, or computed a metric with another number of sums)
     */
    public double compute() {
        return computeFrom(totals());
    }

    private double[] totals() {
        double[] local = localState();
        ProcessGroup g = group != null ? group : Distributed.isInitialized() ? Distributed.defaultGroup() : null;
        if (g == null || g.size() == 1) {
            return local;
        }
        float[] packed = new float[2 * local.length];
        for (int i = 0; i < local.length; i++) {
            float hi = (float) local[i];
            packed[2 * i] = hi;
            packed[2 * i + 1] = (float) (local[i] - hi);
        }
        try (var scope = Tensors.scope()) {
            Tensor mine = Tensor.of(packed, packed.length).to(g.device());
            List<Tensor> all = new ArrayList<>();
            for (int r = 0; r < g.size(); r++) {
                all.add(Tensor.zeros(packed.length).to(g.device()));
            }
            g.allGather(all, mine).await();
            double[] totals = new double[local.length];
            for (Tensor t : all) {
                float[] v = t.toFloatArray();
                for (int i = 0; i < totals.length; i++) {
                    totals[i] += (double) v[2 * i] + (double) v[2 * i + 1];
                }
            }
            return totals;
        }
    }
}
