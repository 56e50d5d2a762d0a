package org.ddp4j.models.gpt2;

/**
 * GPT-2's hyper-parameters with Hugging Face's names ({@code transformers.GPT2Config}): vocabulary
 * and context sizes, width, depth, heads, the three dropouts and the layer norms' epsilon.
 * Immutable; the {@code with*} methods return changed copies.
 *
 * @param vocabSize tokens in the vocabulary ({@code vocab_size}, 50257 for GPT-2's BPE)
 * @param nPositions the longest sequence, the position table's rows ({@code n_positions})
 * @param nEmbd the model width ({@code n_embd})
 * @param nLayer transformer blocks ({@code n_layer})
 * @param nHead attention heads per block ({@code n_head}); must divide nEmbd
 * @param nInner the MLP's hidden width ({@code n_inner}), 4 × nEmbd when null in Hugging Face
 * @param residPdrop dropout after attention and MLP projections ({@code resid_pdrop})
 * @param embdPdrop dropout on the embeddings ({@code embd_pdrop})
 * @param attnPdrop dropout on the attention probabilities ({@code attn_pdrop})
 * @param layerNormEpsilon the layer norms' eps ({@code layer_norm_epsilon})
 * @param initializerRange the std of the weights' normal initialisation ({@code initializer_range})
 */
public record GPT2Config(int vocabSize, int nPositions, int nEmbd, int nLayer, int nHead, int nInner, double residPdrop,
        double embdPdrop, double attnPdrop, double layerNormEpsilon, double initializerRange) {

    /**
     * @throws IllegalArgumentException when a size is not positive, nHead does not divide nEmbd, or
     *     a dropout is outside [0, 1)
     */
    public GPT2Config {
        if (vocabSize <= 0 || nPositions <= 0 || nEmbd <= 0 || nLayer <= 0 || nHead <= 0 || nInner <= 0) {
            throw new IllegalArgumentException("GPT2Config: sizes must be positive, got vocab_size=" + vocabSize
                    + ", n_positions=" + nPositions + ", n_embd=" + nEmbd + ", n_layer=" + nLayer + ", n_head=" + nHead
                    + ", n_inner=" + nInner);
        }
        if (nEmbd % nHead != 0) {
            throw new IllegalArgumentException("GPT2Config: n_embd=" + nEmbd + " is not a multiple of n_head=" + nHead
                    + ": each head takes n_embd / n_head channels; pick n_head among the divisors of n_embd");
        }
        for (double p : new double[] {residPdrop, embdPdrop, attnPdrop}) {
            if (!(p >= 0 && p < 1)) {
                throw new IllegalArgumentException("GPT2Config: dropouts must lie in [0, 1), got resid_pdrop=" + residPdrop
                        + ", embd_pdrop=" + embdPdrop + ", attn_pdrop=" + attnPdrop);
            }
        }
        if (!(layerNormEpsilon > 0)) {
            throw new IllegalArgumentException("GPT2Config: layer_norm_epsilon must be positive, got " + layerNormEpsilon);
        }
    }

    /** Hugging Face's defaults for a model of this shape: n_inner 4 × nEmbd, dropouts 0.1, eps 1e-5, init std 0.02. */
    public static GPT2Config of(int vocabSize, int nPositions, int nEmbd, int nLayer, int nHead) {
        return new GPT2Config(vocabSize, nPositions, nEmbd, nLayer, nHead, 4 * nEmbd, 0.1, 0.1, 0.1, 1e-5, 0.02);
    }

    /** GPT-2 small, 124 M parameters ("gpt2"). */
    public static GPT2Config gpt2() {
        return of(50257, 1024, 768, 12, 12);
    }

    /** GPT-2 medium, 350 M parameters ("gpt2-medium"). */
    public static GPT2Config gpt2Medium() {
        return of(50257, 1024, 1024, 24, 16);
    }

    /** GPT-2 large, 774 M parameters ("gpt2-large"). */
    public static GPT2Config gpt2Large() {
        return of(50257, 1024, 1280, 36, 20);
    }

    /** GPT-2 XL, 1.56 B parameters ("gpt2-xl"). */
    public static GPT2Config gpt2Xl() {
        return of(50257, 1024, 1600, 48, 25);
    }

    /**
     * A configuration by its Hugging Face model name: "gpt2", "gpt2-medium", "gpt2-large", "gpt2-xl".
     *
     * @throws IllegalArgumentException for another name, listing the known ones
     */
    public static GPT2Config named(String name) {
        return switch (name) {
            case "gpt2" -> gpt2();
            case "gpt2-medium" -> gpt2Medium();
            case "gpt2-large" -> gpt2Large();
            case "gpt2-xl" -> gpt2Xl();
            default -> throw new IllegalArgumentException("unknown GPT-2 configuration '" + name
                    + "': use gpt2, gpt2-medium, gpt2-large or gpt2-xl, or build a GPT2Config for a small model");
        };
    }

    /** This configuration with all three dropouts set to p (0 for exact comparisons). */
    public GPT2Config withDropout(double p) {
        return new GPT2Config(vocabSize, nPositions, nEmbd, nLayer, nHead, nInner, p, p, p, layerNormEpsilon,
                initializerRange);
    }

    /** This configuration with another vocabulary size (e.g. 256 for a byte-level tokenizer). */
    public GPT2Config withVocabSize(int size) {
        return new GPT2Config(size, nPositions, nEmbd, nLayer, nHead, nInner, residPdrop, embdPdrop, attnPdrop,
                layerNormEpsilon, initializerRange);
    }

    /** This configuration with another context length. */
    public GPT2Config withNPositions(int positions) {
        return new GPT2Config(vocabSize, positions, nEmbd, nLayer, nHead, nInner, residPdrop, embdPdrop, attnPdrop,
                layerNormEpsilon, initializerRange);
    }

    /** Channels per attention head, nEmbd / nHead. */
    public int headDim() {
        return nEmbd / nHead;
    }
}
