package org.ddp4j.distributed;

/**
 * How {@link ProcessGroup#allReduce(org.ddp4j.tensor.Tensor, ReduceOp)} combines the ranks'
 * tensors, element by element. Mirrors {@code torch.distributed.ReduceOp}; the ordinals match
 * PyTorch's numbering (SUM 0, AVG 1, PRODUCT 2, MIN 3, MAX 4) and the native enum.
 */
public enum ReduceOp {
    /** Sum over ranks. Every dtype (bfloat16 and float16 computed in float32). */
    SUM,
    /**
     * Mean over ranks: the sum divided by the world size. float32, bfloat16, float16 (an int64 tensor gives
     * {@link IllegalArgumentException}). PyTorch's Gloo backend lacks AVG; ddp4j's has it.
     */
    AVG,
    /** Product over ranks. Every dtype (bfloat16 and float16 computed in float32). */
    PRODUCT,
    /** Minimum over ranks. Every dtype (bfloat16 and float16 computed in float32). */
    MIN,
    /** Maximum over ranks. Every dtype (bfloat16 and float16 computed in float32). */
    MAX
}
