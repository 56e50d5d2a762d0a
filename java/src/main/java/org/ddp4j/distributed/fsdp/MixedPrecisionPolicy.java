package org.ddp4j.distributed.fsdp;

import org.ddp4j.tensor.DType;

/**
 * fully_shard's precisions: {@code torch.distributed.fsdp.MixedPrecisionPolicy}. The shards, the
 * optimizer state and the gradients the optimizer sees stay float32 (the master copy) whatever is
 * set here.
 *
 * <p>{@code paramDtype} is the dtype the parameters are all-gathered in (half the bytes in
 * bfloat16) and rounded to for compute. ddp4j's layers keep float32 parameter tensors, so the
 * gathered values are widened back into them: the compute sees bf16-rounded weights, and runs in
 * bf16 where {@link org.ddp4j.amp.Autocast} is on (its rounding of those weights is exact). PyTorch
 * swaps in bf16 tensors instead; the values the GEMMs read are the same.
 *
 * <p>{@code reduceDtype} is the dtype the gradients are reduce-scattered in; float32 keeps the
 * sum exact to float32 rounding while bf16 halves the traffic.
 *
 * @param paramDtype null (float32: no rounding), {@link DType#BFLOAT16} or {@link DType#FLOAT16}
 * @param reduceDtype null (the paramDtype), float32, bfloat16 or float16
 */
public record MixedPrecisionPolicy(DType paramDtype, DType reduceDtype) {
    /**
     * @throws IllegalArgumentException for a dtype that is not floating point
     */
    public MixedPrecisionPolicy {
        for (DType d : new DType[] {paramDtype, reduceDtype}) {
            if (d != null && d != DType.FLOAT32 && d != DType.BFLOAT16 && d != DType.FLOAT16) {
                throw new IllegalArgumentException("MixedPrecisionPolicy: dtypes must be FLOAT32, BFLOAT16 or FLOAT16 (or"
                        + " null), got " + d);
            }
        }
    }

    /** PyTorch's default: everything in the parameters' float32. */
    public static MixedPrecisionPolicy defaults() {
        return new MixedPrecisionPolicy(null, null);
    }
}
