package org.ddp4j.distributed.algorithms.ddpcommhooks;

import org.ddp4j.distributed.Distributed;
import org.ddp4j.distributed.ProcessGroup;
import org.ddp4j.distributed.ReduceOp;
import org.ddp4j.distributed.Work;
import org.ddp4j.futures.Future;
import org.ddp4j.tensor.DType;
import org.ddp4j.tensor.Tensor;

/**
 * The stateless built-in communication hooks, as PyTorch's
 * {@code torch.distributed.algorithms.ddp_comm_hooks.default_hooks}. Their state is the process
 * group to reduce over (null: the default group):
 * <pre>{@code
 * ddp.registerCommHook(group, DefaultHooks.BF16_COMPRESS);
 * }</pre>
 */
public final class DefaultHooks {
    private DefaultHooks() {}

    /** {@link #allreduceHook}: DDP's own reduction (what runs with no hook registered). */
    public static final CommHook<ProcessGroup> ALLREDUCE = DefaultHooks::allreduceHook;
    /** {@link #fp16CompressHook}. */
    public static final CommHook<ProcessGroup> FP16_COMPRESS = DefaultHooks::fp16CompressHook;
    /** {@link #bf16CompressHook}. */
    public static final CommHook<ProcessGroup> BF16_COMPRESS = DefaultHooks::bf16CompressHook;

    private static ProcessGroup orDefault(ProcessGroup group) {
        return group != null ? group : Distributed.defaultGroup();
    }

    /**
     * The mean of the bucket over the ranks, in place: an all-reduce of the float32 buffer with
     * {@link ReduceOp#AVG} (the sum times 1 / world size). Mirrors {@code default_hooks.allreduce_hook},
     * which divides first and then sums; DDP registered with {@link #ALLREDUCE} on its own group
     * takes its built-in path instead (the same reduction, with DDP's unused-parameter and join
     * flags in the same message).
     */
    public static Future<Tensor> allreduceHook(ProcessGroup group, GradBucket bucket) {
        Tensor buffer = bucket.buffer();
        Work work = orDefault(group).allReduce(buffer, ReduceOp.AVG);
        return Future.of(work, buffer);
    }

    /**
     * The bucket divided by the world size, cast to float16, all-reduced (SUM) in float16, and cast
     * back into the float32 buffer. Mirrors {@code default_hooks.fp16_compress_hook}: half the bytes
     * on the wire. Differs only in where it divides: in float32 before the cast (one rounding),
     * where PyTorch divides the float16 copy (two). Values beyond float16's range (65504) become
     * infinite, as in PyTorch; bfloat16 has float32's range.
     */
    public static Future<Tensor> fp16CompressHook(ProcessGroup group, GradBucket bucket) {
        return compressHook(orDefault(group), bucket, DType.FLOAT16);
    }

    /**
     * As {@link #fp16CompressHook} in bfloat16 (float32's range, 8 bits of mantissa). Mirrors
     * {@code default_hooks.bf16_compress_hook}. The shared-memory and small Gloo all-reduces sum
     * in float32 and round once; Gloo's ring rounds once per hop (see {@link ProcessGroup}).
     */
    public static Future<Tensor> bf16CompressHook(ProcessGroup group, GradBucket bucket) {
        return compressHook(orDefault(group), bucket, DType.BFLOAT16);
    }

    private static Future<Tensor> compressHook(ProcessGroup group, GradBucket bucket, DType dtype) {
        Tensor buffer = bucket.buffer();
        buffer.mulInPlace(1f / group.size()); // overwritten by the result below
        Tensor compressed = buffer.to(dtype).keep(); // outlives the caller's scope until the callback
        Work work;
        try {
            work = group.allReduce(compressed, ReduceOp.SUM);
        } catch (RuntimeException e) {
            compressed.close();
            throw e;
        }
        return Future.of(work, compressed).then(f -> {
            try {
                buffer.copyFrom(f.value()); // converts back to float32
                return buffer;
            } finally {
                compressed.close();
            }
        });
    }
}
