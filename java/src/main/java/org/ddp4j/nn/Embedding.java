package org.ddp4j.nn;

import org.ddp4j.nn.functional.EmbeddingFunction;
import org.ddp4j.tensor.Generator;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;

/**
 * A lookup table of embeddings. Mirrors {@code torch.nn.Embedding(num_embeddings, embedding_dim,
 * padding_idx)}: parameter "weight" [num_embeddings, embedding_dim] initialised N(0, 1) as PyTorch
 * does, the row padding_idx zeroed; the gradient is dense (no sparse, max_norm or
 * scale_grad_by_freq).
 */
public class Embedding extends Module {
    private final long numEmbeddings;
    private final long embeddingDim;
    private final Long paddingIdx;

    /** A table without padding row, initialised from {@link Generator#defaultGenerator()}. */
    public Embedding(long numEmbeddings, long embeddingDim) {
        this(numEmbeddings, embeddingDim, null, Generator.defaultGenerator());
    }

    /** A table without padding row, initialised from generator. */
    public Embedding(long numEmbeddings, long embeddingDim, Generator generator) {
        this(numEmbeddings, embeddingDim, null, generator);
    }

    /**
     * A table initialised from generator: N(0, 1) everywhere, then the padding row set to 0.
     *
     * @param numEmbeddings the number of rows (the vocabulary size)
     * @param embeddingDim the size of each embedding
     * @param paddingIdx the row that is zero and gets no gradient, in [-num, num) (negative counts
     *     from the end), or null for none
     * @param generator the random source of the initial weights
     * @throws IllegalArgumentException if a size is negative or paddingIdx is out of range
     */
    public Embedding(long numEmbeddings, long embeddingDim, Long paddingIdx, Generator generator) {
        if (numEmbeddings < 0 || embeddingDim < 0) {
            throw new IllegalArgumentException("Embedding: sizes must be non-negative, got num_embeddings="
                    + numEmbeddings + ", embedding_dim=" + embeddingDim);
        }
        long padding = EmbeddingFunction.normalizePaddingIdx(paddingIdx, numEmbeddings);
        this.numEmbeddings = numEmbeddings;
        this.embeddingDim = embeddingDim;
        this.paddingIdx = padding < 0 ? null : padding;
        Tensor w = Tensor.zeros(numEmbeddings, embeddingDim).keep();
        Init.normal(w, 0, 1, generator);
        if (padding >= 0 && embeddingDim > 0) {
            try (var scope = Tensors.scope()) {
                w.flatSlice(padding * embeddingDim, embeddingDim).fill(0);
            }
        }
        registerParameter("weight", w);
    }

    /**
     * Looks the indices up.
     *
     * @param input int64 indices of any shape, each in [0, num_embeddings)
     * @return float32 [*input.shape, embedding_dim]
     * @throws IllegalArgumentException if input is not int64 or an index is out of range (the
     *     message names the index and num_embeddings)
     */
    @Override
    public Tensor forward(Tensor input) {
        return EmbeddingFunction.apply(input, weight(), paddingIdx);
    }

    /** The weight parameter [num_embeddings, embedding_dim]. Mirrors {@code Embedding.weight}. */
    public Tensor weight() {
        return parameter("weight");
    }

    /** Mirrors {@code Embedding.num_embeddings}. */
    public long numEmbeddings() {
        return numEmbeddings;
    }

    /** Mirrors {@code Embedding.embedding_dim}. */
    public long embeddingDim() {
        return embeddingDim;
    }

    /** The padding row in [0, num_embeddings), or null. Mirrors {@code Embedding.padding_idx}. */
    public Long paddingIdx() {
        return paddingIdx;
    }

    /** PyTorch's extra_repr, e.g. "50257, 768" or "10, 3, padding_idx=0". */
    @Override
    protected String extraRepr() {
        return numEmbeddings + ", " + embeddingDim + (paddingIdx != null ? ", padding_idx=" + paddingIdx : "");
    }
}
