package org.ddp4j.nn.parallel;

import java.util.Arrays;
import java.util.List;
import org.ddp4j.distributed.Work;
import org.ddp4j.distributed.algorithms.ddpcommhooks.GradBucket;
import org.ddp4j.futures.Future;
import org.ddp4j.tensor.Tensor;

/**
 * One DDP bucket: a flat float32 tensor whose slices are the gradients of a group of parameters,
 * so that one all-reduce covers them all without copying. Ready when every parameter in it has
 * had its gradient accumulated in this backward pass. The {@link Reducer}'s own bucket, as PyTorch's
 * c10d {@code Reducer::Bucket}; a communication hook sees it through the public {@link GradBucket}.
 *
 * <p>Layout of {@link #flat}: the gradients ({@link #gradientNumel} elements, one slice per
 * parameter in bucket order), then one "used" flag per parameter, then one "still training" flag.
 * Each rank writes 1 where it used the parameter since the last synchronisation (else 0), and 1 in
 * the training flag unless it is a rank that has joined and only shadows the others
 * ({@link Join}). The flags travel in the bucket's own all-reduce, so agreeing on which
 * parameters were used anywhere, and whether any rank still trains, costs no extra round trip:
 * after the average a flag is k/world, non-zero exactly when k &gt; 0 ranks set it.
 */
final class ReducerBucket {
    final int index;
    final List<Tensor> parameters;
    final Tensor flat;
    /** The gradient slice of each parameter (what {@code grad()} is while the parameter has one). */
    final List<Tensor> views;
    /** The parameters' "used" flags followed by the "still training" flag: a view of flat. */
    final Tensor flags;
    final long gradientNumel;
    private final boolean[] used;
    private int usedCount;
    private int pending;
    /** The bucket's all-reduce: of {@link #flat} on the built-in path; of {@link #flags} alone under a hook. */
    Work work;
    /** Under a communication hook: the future of the reduced gradient. */
    Future<Tensor> future;
    /** The gradients alone (the first {@link #gradientNumel} elements of flat), made for the first hook call. */
    private Tensor gradients;
    private GradBucket hookView;

    ReducerBucket(int index, List<Tensor> parameters, Tensor flat, List<Tensor> views, long gradientNumel) {
        this.index = index;
        this.parameters = parameters;
        this.flat = flat;
        this.views = views;
        this.gradientNumel = gradientNumel;
        this.flags = flat.flatSlice(gradientNumel, parameters.size() + 1L).keep();
        this.used = new boolean[parameters.size()];
        reset();
    }

    /** Starts a new backward pass: every parameter's gradient is outstanding again. */
    void reset() {
        pending = parameters.size();
        work = null;
        future = null;
    }

    /** The flat float32 gradients (a view of flat without the flags). */
    Tensor gradients() {
        if (gradients == null) {
            gradients = flat.flatSlice(0, gradientNumel).keep();
        }
        return gradients;
    }

    /** What a communication hook gets for this bucket; {@code last}: whether it is the last one launched. */
    GradBucket hookView(boolean last) {
        if (hookView == null || hookView.isLast() != last) {
            hookView = new GradBucket(index, gradients(), parameters, views, last);
        }
        return hookView;
    }

    /** Marks one parameter's gradient as accumulated; returns whether the bucket is now ready. */
    boolean markReady() {
        pending--;
        return pending == 0;
    }

    boolean isReady() {
        return pending <= 0;
    }

    /** Records that the parameter at {@code slot} got a gradient on this rank since the last sync. */
    void markUsed(int slot) {
        if (!used[slot]) {
            used[slot] = true;
            usedCount++;
        }
    }

    /** Whether this rank used every parameter of the bucket since the last sync (the usual case). */
    boolean allUsedLocally() {
        return usedCount == used.length;
    }

    boolean usedLocally(int slot) {
        return used[slot];
    }

    /** Forgets which parameters were used: called after each synchronisation. */
    void clearUsed() {
        Arrays.fill(used, false);
        usedCount = 0;
    }

    /**
     * Writes this rank's flags before the all-reduce: 1 for each parameter used here (0 when
     * {@code training} is false: a joined rank contributes nothing), and the training flag.
     */
    void writeFlags(boolean training) {
        if (training && allUsedLocally()) {
            flags.fill(1); // one native call in the usual case
            return;
        }
        float[] values = new float[used.length + 1];
        for (int i = 0; i < used.length; i++) {
            values[i] = training && used[i] ? 1f : 0f;
        }
        values[used.length] = training ? 1f : 0f;
        try (Tensor host = Tensor.of(values, values.length); Tensor t = host.to(flags.device())) {
            flags.copyFrom(t);
        }
    }

    /** Bytes of gradient in the bucket (the flags not counted). */
    long bytes() {
        return gradientNumel * 4;
    }

    /** Frees the flat tensor and its views. */
    void close() {
        if (gradients != null) {
            gradients.close();
        }
        flags.close();
        for (Tensor v : views) {
            v.close();
        }
        flat.close();
    }
}
