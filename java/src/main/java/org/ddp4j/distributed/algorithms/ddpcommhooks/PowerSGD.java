package org.ddp4j.distributed.algorithms.ddpcommhooks;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.ddp4j.distributed.ProcessGroup;
import org.ddp4j.distributed.ReduceOp;
import org.ddp4j.distributed.Work;
import org.ddp4j.futures.Future;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;

/**
 * PowerSGD gradient compression (Vogels et al., 2019, https://arxiv.org/abs/1905.13727) as a DDP
 * communication hook: PyTorch's {@code powerSGD_hook.powerSGD_hook}, step for step.
 * <pre>{@code
 * var state = new PowerSGDState(group, 4, 10, 2, true, true, 0f, 0);
 * ddp.registerCommHook(state, PowerSGD.POWER_SGD);
 * }</pre>
 */
public final class PowerSGD {
    private PowerSGD() {}

    /** {@link #powerSGDHook} as a hook value. */
    public static final CommHook<PowerSGDState> POWER_SGD = PowerSGD::powerSGDHook;

    /** A compressed gradient: the matrix view of its gradient and its factors' views in the bucket's P and Q memory. */
    private record Compressed(Tensor matrix, Tensor p, Tensor q) {}

    /**
     * For the first {@code startPowerSGDIter} iterations, the plain mean ({@link DefaultHooks#allreduceHook}).
     * Then, for each bucket:
     * <ol>
     *   <li>with error feedback, the bucket's last error is added to the gradient (and the sum kept);
     *   <li>each gradient is viewed as a matrix n × m (dim 0 × the rest); those with n·m &gt;
     *       (n + m)·r·minCompressionRate are compressed, the others (biases, BatchNorm weights:
     *       rank ≤ 1 never qualifies) are summed over the ranks in one flat all-reduce and divided
     *       by the world size;
     *   <li>Q [m, r] is the last iteration's (warm start) or drawn from the seeded generator (the
     *       same on every rank), and orthogonalised;
     *   <li>P = M Q; the Ps are summed over the ranks (one all-reduce) and orthogonalised;
     *   <li>Q = Mᵀ P; the Qs are summed over the ranks (one all-reduce) and divided by the world size;
     *   <li>M ≈ P Qᵀ replaces the gradient; with error feedback the error (what was kept minus
     *       the result, over the whole bucket, as PyTorch) is stored for the next iteration.
     * </ol>
     * The compressed tensors are ordered by shape (first appearance), then by position, as
     * PyTorch's {@code shape_to_tensors}, so P and Q memory have PyTorch's layout. The matrix
     * products run on the native GEMM. The all-reduces of the uncompressed tensors and of the Ps
     * start at once; the Qs' is issued when DDP waits for the bucket (on the training thread, in
     * bucket order). Orthogonalisation is PyTorch's: Gram–Schmidt up to r = 2, above that the Q of a
     * Householder QR with LAPACK's signs (torch.linalg.qr), which stays exact for gradients of
     * lower rank than r.
     */
    public static Future<Tensor> powerSGDHook(PowerSGDState state, GradBucket bucket) {
        ProcessGroup group = state.group();
        int world = group.size();
        Tensor input = bucket.buffer();
        if (state.iter < state.startPowerSGDIter) {
            state.maybeIncreaseIter(bucket);
            return DefaultHooks.allreduceHook(group, bucket);
        }
        int index = bucket.index();
        long total = input.numel();
        Tensor inputCopy = null;
        if (state.useErrorFeedback) {
            Tensor error = state.errorDict.get(index);
            if (error != null && error.numel() == total) {
                input.addInPlace(error, 1f);
            } else {
                if (error != null) {
                    error.close();
                }
                state.errorDict.put(index, Tensor.full(0, input.dtype(), input.device(), total).keep());
            }
            inputCopy = input.copy().keep();
        }
        List<Tensor> gradients = bucket.gradients();
        List<Tensor> uncompressed = new ArrayList<>();
        Map<List<Long>, List<Tensor>> byShape = new LinkedHashMap<>();
        long totalP = 0, totalQ = 0;
        for (Tensor g : gradients) {
            long n = g.dim() == 0 ? 1 : g.size(0);
            long m = n == 0 ? 0 : g.numel() / n;
            long r = Math.min(Math.min(n, m), state.matrixApproximationRank);
            long before = n * m, after = (n + m) * r;
            state.totalNumelBeforeCompression += before;
            if (after * state.minCompressionRate < before) {
                byShape.computeIfAbsent(List.of(n, m), k -> new ArrayList<>()).add(g);
                totalP += n * r;
                totalQ += m * r;
                state.totalNumelAfterCompression += after;
            } else {
                uncompressed.add(g);
                state.totalNumelAfterCompression += before;
            }
        }
        boolean randomizeQs = false;
        Tensor pMemory = state.pMemoryDict.get(index);
        Tensor qMemory = state.qMemoryDict.get(index);
        if (!state.warmStart || pMemory == null || pMemory.numel() != totalP || qMemory.numel() != totalQ) {
            randomizeQs = true;
            if (pMemory != null) {
                pMemory.close();
                qMemory.close();
            }
            pMemory = Tensor.full(0, input.dtype(), input.device(), totalP).keep();
            qMemory = Tensor.full(0, input.dtype(), input.device(), totalQ).keep();
            state.pMemoryDict.put(index, pMemory);
            state.qMemoryDict.put(index, qMemory);
        }
        List<Compressed> compressed = new ArrayList<>();
        long pAt = 0, qAt = 0;
        for (Map.Entry<List<Long>, List<Tensor>> e : byShape.entrySet()) {
            long n = e.getKey().get(0), m = e.getKey().get(1);
            long r = Math.min(Math.min(n, m), state.matrixApproximationRank);
            for (Tensor g : e.getValue()) {
                compressed.add(new Compressed(g.view(n, m).keep(), pMemory.flatSlice(pAt, n, r).keep(),
                        qMemory.flatSlice(qAt, m, r).keep()));
                pAt += n * r;
                qAt += m * r;
            }
        }
        if (randomizeQs && totalQ > 0) {
            float[] values = state.qInitializer.initialQs(index, (int) totalQ, state.nextSeed());
            try (var scope = Tensors.scope()) {
                qMemory.copyFrom(Tensor.of(values, values.length).to(qMemory.device()));
            }
        }
        for (Compressed c : compressed) {
            LowRankMath.orthogonalize(c.q(), state.orthogonalizationEpsilon);
            LowRankMath.mq(c.matrix(), c.q(), c.p());
        }
        long uncompressedNumel = uncompressed.stream().mapToLong(Tensor::numel).sum();
        Tensor flatUncompressed = Tensor.full(0, input.dtype(), input.device(), uncompressedNumel).keep();
        Tensors.flattenInto(uncompressed, flatUncompressed);
        // Both all-reduces start now (PyTorch issues the Ps' once the first is done): same order on every rank.
        Work uncompressedWork = group.allReduce(flatUncompressed, ReduceOp.SUM);
        Work pWork = group.allReduce(pMemory, ReduceOp.SUM);
        Tensor qMem = qMemory;
        Tensor copy = inputCopy;
        return Future.deferred(() -> {
            try {
                uncompressedWork.await();
                flatUncompressed.mulInPlace(1f / world);
                Tensors.unflattenFrom(flatUncompressed, uncompressed);
                pWork.await();
                for (Compressed c : compressed) {
                    LowRankMath.orthogonalize(c.p(), state.orthogonalizationEpsilon);
                    LowRankMath.mtp(c.matrix(), c.p(), c.q());
                }
                group.allReduce(qMem, ReduceOp.SUM).await();
                qMem.mulInPlace(1f / world);
                for (Compressed c : compressed) {
                    LowRankMath.pqt(c.p(), c.q(), c.matrix());
                }
                if (copy != null) {
                    Tensor error = state.errorDict.get(index);
                    error.copyFrom(copy);
                    error.addInPlace(input, -1f);
                }
                if (!state.warmStart) {
                    state.pMemoryDict.remove(index).close();
                    state.qMemoryDict.remove(index).close();
                }
                state.maybeIncreaseIter(bucket);
                return input;
            } finally {
                flatUncompressed.close();
                if (copy != null) {
                    copy.close();
                }
                for (Compressed c : compressed) {
                    c.matrix().close();
                    c.p().close();
                    c.q().close();
                }
            }
        });
    }
}
