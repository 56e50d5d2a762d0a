package org.ddp4j.nn.utils;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.WeakHashMap;
import org.ddp4j.tensor.Tensor;

/**
 * Gradient clipping by total norm. Mirrors {@code torch.nn.utils.clip_grad_norm_}.
 * Example: {@code double norm = ClipGradNorm.clipGradNorm(model.parameters(), 1.0);} between
 * {@code loss.backward()} and {@code optimizer.step()} (under DDP the gradients are already
 * averaged then, so every rank clips alike).
 */
public final class ClipGradNorm {
    private ClipGradNorm() {}

    /** {@code clip_grad_norm_(parameters, max_norm)}: the 2-norm. See {@link #clipGradNorm(List, double, double, boolean)}. */
    public static double clipGradNorm(List<Tensor> parameters, double maxNorm) {
        return clipGradNorm(parameters, maxNorm, 2.0, false);
    }

    /** {@code clip_grad_norm_(parameters, max_norm, norm_type)}. See {@link #clipGradNorm(List, double, double, boolean)}. */
    public static double clipGradNorm(List<Tensor> parameters, double maxNorm, double normType) {
        return clipGradNorm(parameters, maxNorm, normType, false);
    }

    /**
     * Scales the gradients of {@code parameters} in place so that their total norm (the norm of
     * the vector of all gradient elements) is at most about maxNorm: each is multiplied by
     * {@code min(1, maxNorm / (total + 1e-6))} in float32, as PyTorch. Parameters without a
     * gradient are skipped. The norms are computed on the CPU in double (GPU gradients are copied
     * to the host for it) and rounded to float32, as PyTorch returns a float32 tensor.
     *
     * @param parameters tensors whose {@code grad()} is clipped (usually {@code model.parameters()})
     * @param maxNorm the largest total norm, {@code >= 0}
     * @param normType p of the p-norm, {@code > 0}, or {@link Double#POSITIVE_INFINITY} for the
     *     largest absolute value
     * @param errorIfNonfinite throw instead of scaling when the total norm is NaN or infinite
     * @return the total norm of the gradients before clipping (0 when none has a gradient)
     * @throws IllegalArgumentException if maxNorm is negative or NaN, normType is not positive, or
     *     (errorIfNonfinite) the total norm is not finite, in PyTorch's wording: "The total norm of
     *     order 2.0 for gradients from `parameters` is non-finite, so it cannot be clipped. ..."
     */
    public static double clipGradNorm(List<Tensor> parameters, double maxNorm, double normType,
            boolean errorIfNonfinite) {
        if (!(maxNorm >= 0)) {
            throw new IllegalArgumentException("clipGradNorm: max_norm must be non-negative, got " + maxNorm);
        }
        if (!(normType > 0)) {
            throw new IllegalArgumentException("clipGradNorm: norm_type must be positive or Double.POSITIVE_INFINITY,"
                    + " got " + normType);
        }
        List<Tensor> grads = new ArrayList<>();
        // In parameter order, so the partial sums always add up in one order (the same bits every run).
        Map<ShardCombiner, List<Tensor>> shardedGrads = new LinkedHashMap<>();
        for (Tensor p : parameters) {
            if (p.grad() != null) {
                ShardCombiner combiner = SHARDS.get(p);
                if (combiner == null) {
                    grads.add(p.grad());
                } else {
                    shardedGrads.computeIfAbsent(combiner, c -> new ArrayList<>()).add(p.grad());
                }
            }
        }
        if (grads.isEmpty() && shardedGrads.isEmpty()) {
            return 0;
        }
        boolean inf = Double.isInfinite(normType);
        double total = combine(grads, normType);
        for (Map.Entry<ShardCombiner, List<Tensor>> e : shardedGrads.entrySet()) {
            double local = combine(e.getValue(), normType);
            double all = e.getKey().combine(local, inf);
            total = inf ? Math.max(total, all) : total + all;
        }
        grads.addAll(shardedGrads.values().stream().flatMap(List::stream).toList());
        float totalNorm = (float) (inf ? total : Math.pow(total, 1 / normType));
        if (errorIfNonfinite && !Float.isFinite(totalNorm)) {
            throw new IllegalArgumentException("The total norm of order " + normType + " for gradients from `parameters` is"
                    + " non-finite, so it cannot be clipped. To disable this error and scale the gradients by the"
                    + " non-finite norm anyway, pass errorIfNonfinite=false");
        }
        float clipCoef = (float) maxNorm / (totalNorm + 1e-6f);
        if (clipCoef < 1f || Float.isNaN(clipCoef)) {
            for (Tensor g : grads) {
                g.mulInPlace(clipCoef);
            }
        }
        return totalNorm;
    }

    /**
     * Combines a rank's partial result across the ranks that hold the other shards. Shards whose
     * combiners are equal ({@code equals}) are summed locally first and combined once.
     */
    public interface ShardCombiner {
        /**
         * @param local this rank's sum of |norm|^p over its shards (or their largest norm when max is set)
         * @param max combine by maximum (the infinity norm) instead of by sum
         * @return the value over all ranks; every rank must get the same
         */
        double combine(double local, boolean max);
    }

    /** Shards of sharded parameters (fully_shard's), each with the combiner of its group of ranks. */
    private static final Map<Tensor, ShardCombiner> SHARDS = Collections.synchronizedMap(new WeakHashMap<>());

    /**
     * Declares {@code shards} to be one rank's pieces of parameters split across ranks, so that
     * clipping them clips by the norm over all ranks, as PyTorch's {@code clip_grad_norm_} does
     * for DTensor gradients: each rank's partial sum goes through {@code combiner} (an all-reduce).
     * For sharding wrappers (fully_shard calls it); then every rank must clip the same list.
     */
    public static void registerShards(List<Tensor> shards, ShardCombiner combiner) {
        for (Tensor t : shards) {
            SHARDS.put(t, combiner);
        }
    }

    /** Forgets shards registered by {@link #registerShards} (their wrapper is closed). */
    public static void unregisterShards(List<Tensor> shards) {
        for (Tensor t : shards) {
            SHARDS.remove(t);
        }
    }

    /** The sum of each gradient's norm^p (or their largest norm for p = infinity). */
    private static double combine(List<Tensor> grads, double normType) {
        boolean inf = Double.isInfinite(normType);
        double total = 0;
        for (Tensor g : grads) {
            // Each gradient's norm is rounded to float32 before they are combined, as torch.stack(norms) does.
            float norm = (float) norm(g, normType);
            total = inf ? Math.max(total, norm) : total + Math.pow(norm, normType);
        }
        return total;
    }

    /** Elements read into the Java heap at a time: a 124M model's gradients would otherwise pass through it whole every step. */
    private static final long CHUNK = 1 << 20;

    /** The p-norm of g, accumulated in double in element order, CHUNK elements at a time. */
    private static double norm(Tensor g, double normType) {
        boolean inf = Double.isInfinite(normType);
        double acc = 0;
        for (long at = 0; at < g.numel(); at += CHUNK) {
            float[] values;
            if (at == 0 && g.numel() <= CHUNK) {
                values = g.toFloatArray();
            } else {
                try (Tensor chunk = g.flatSlice(at, Math.min(CHUNK, g.numel() - at))) {
                    values = chunk.toFloatArray();
                }
            }
            for (float v : values) {
                if (inf) {
                    if (Float.isNaN(v)) {
                        return Double.NaN;
                    }
                    acc = Math.max(acc, Math.abs(v));
                } else {
                    acc += normType == 2 ? (double) v * v : Math.pow(Math.abs(v), normType);
                }
            }
        }
        return inf ? acc : normType == 2 ? Math.sqrt(acc) : Math.pow(acc, 1 / normType);
    }
}
