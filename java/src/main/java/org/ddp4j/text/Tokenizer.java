package org.ddp4j.text;

import java.util.Locale;

/**
 * Turns text into token ids and back. Two vocabularies: GPT-2's byte-pair encoding
 * ({@link GPT2Tokenizer}, 50257 ids, tiktoken's {@code r50k_base}) and raw UTF-8 bytes
 * ({@link ByteTokenizer}, 256 ids: nanoGPT's character-level models, any text, no vocabulary file).
 * Both fit nanoGPT's uint16 token files ({@link org.ddp4j.data.TokenFile}).
 */
public interface Tokenizer {
    /**
     * The ids of {@code text}, with any special-token text (e.g. {@code "<|endoftext|>"}) encoded as
     * ordinary text. Mirrors tiktoken's {@code encode_ordinary(text)}.
     */
    int[] encode(String text);

    /**
     * The ids of {@code text}; with {@code allowEndOfText} each {@code "<|endoftext|>"} becomes
     * {@link #eotToken()} (tiktoken's {@code encode(text, allowed_special={"<|endoftext|>"})}),
     * without it the same as {@link #encode(String)}.
     */
    int[] encode(String text, boolean allowEndOfText);

    /**
     * The text of {@code ids}. Bytes that do not form valid UTF-8 (a multi-byte character cut between
     * two calls) decode to U+FFFD, as tiktoken's {@code decode(ids, errors="replace")}.
     *
     * @throws IllegalArgumentException naming the first id that is not in [0, {@link #vocabSize()})
     */
    String decode(int[] ids);

    /** The number of ids: every id is in [0, vocabSize()). Mirrors tiktoken's {@code n_vocab}. */
    int vocabSize();

    /**
     * The id that ends a document ({@code "<|endoftext|>"}), written between documents; -1 for a
     * vocabulary without one ({@link ByteTokenizer}). Mirrors tiktoken's {@code eot_token}.
     */
    int eotToken();

    /** The name {@link #byName(String)} takes: "gpt2" or "bytes". */
    String name();

    /**
     * The tokenizer called {@code name}: "gpt2" (GPT-2's BPE) or "bytes" (UTF-8 bytes), any case.
     *
     * @throws IllegalArgumentException naming the choices for any other name
     */
    static Tokenizer byName(String name) {
        return switch (name.toLowerCase(Locale.ROOT)) {
            case GPT2Tokenizer.NAME -> GPT2Tokenizer.get();
            case ByteTokenizer.NAME -> ByteTokenizer.get();
            default -> throw new IllegalArgumentException("unknown tokenizer '" + name + "': use \"" + GPT2Tokenizer.NAME
                    + "\" (GPT-2's BPE, 50257 ids) or \"" + ByteTokenizer.NAME + "\" (UTF-8 bytes, 256 ids)");
        };
    }
}
