package org.ddp4j.nn.functional;

import org.ddp4j.internal.NativeResults;
import org.ddp4j.internal.TensorHandles;
import org.ddp4j.internal.TransformerNatives;
import org.ddp4j.tensor.DType;
import org.ddp4j.tensor.Node;
import org.ddp4j.tensor.Tensor;

/**
 * The differentiable embedding lookup. Mirrors {@code torch.nn.functional.embedding(input, weight,
 * padding_idx)} (dense gradient; no max_norm, scale_grad_by_freq or sparse).
 */
public final class EmbeddingFunction {
    private EmbeddingFunction() {}

    /**
     * Gathers rows of weight: {@code out[..., :] = weight[input[...], :]}. The weight's gradient is
     * dense [V, D]: each row sums the output gradients of the positions that chose it, in position
     * order (the same bits for any thread count); the row paddingIdx receives none.
     *
     * @param input int64 indices of any shape, each in [0, V)
     * @param weight float32 [V, D]
     * @param paddingIdx the row that gets no gradient, in [-V, V) (negative counts from the end), or
     *     null for none
     * @return float32 [*input.shape, D], recording an "EmbeddingBackward" node when weight requires grad
     * @throws IllegalArgumentException if input is not int64, weight is not float32 [V, D], an index
     *     lies outside [0, V) (the message names the index and V), or paddingIdx is out of range
     */
    public static Tensor apply(Tensor input, Tensor weight, Long paddingIdx) {
        if (input.dtype() != DType.INT64) {
            throw new IllegalArgumentException("embedding: input must be int64 indices, got " + input.describe()
                    + " (convert the token ids to int64)");
        }
        if (weight.dim() != 2) {
            throw new IllegalArgumentException("embedding: weight must be [num_embeddings, embedding_dim], got "
                    + weight.describe());
        }
        final long numEmbeddings = weight.size(0);
        final long padding = normalizePaddingIdx(paddingIdx, numEmbeddings);
        Tensor out = TensorHandles.fromNativeResult(TransformerNatives.embeddingForward(TensorHandles.nativeHandle(input),
                TensorHandles.nativeHandle(weight), NativeResults.buffer()));
        return new Node("EmbeddingBackward", null, weight) {
            @Override
            protected Tensor[] backward(Tensor gout) {
                return new Tensor[] {null, TensorHandles.fromNativeResult(TransformerNatives.embeddingBackward(
                        TensorHandles.nativeHandle(gout), TensorHandles.nativeHandle(input), numEmbeddings, padding, NativeResults.buffer()))};
            }
        }.attach(out);
    }

    /**
     * paddingIdx as a row in [0, V), or -1 for none; PyTorch's rule for negative values.
     *
     * @throws IllegalArgumentException if paddingIdx lies outside [-V, V)
     */
    public static long normalizePaddingIdx(Long paddingIdx, long numEmbeddings) {
        if (paddingIdx == null) {
            return -1;
        }
        if (paddingIdx >= numEmbeddings || paddingIdx < -numEmbeddings) {
            throw new IllegalArgumentException("embedding: padding_idx " + paddingIdx + " must be within num_embeddings "
                    + numEmbeddings + " (in [-" + numEmbeddings + ", " + numEmbeddings + "))");
        }
        return paddingIdx < 0 ? paddingIdx + numEmbeddings : paddingIdx;
    }
}
