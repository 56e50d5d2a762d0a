package org.ddp4j.text;

import java.nio.charset.StandardCharsets;

/**
 * Byte-level vocabulary: each UTF-8 byte of the text is one id in [0, 256). Any text encodes, no
 * vocabulary file is needed, and decoding is exact (nanoGPT's character-level models, over bytes
 * rather than characters so that the vocabulary does not depend on the corpus). It has no
 * end-of-text id: {@link #eotToken()} is -1 and {@code "<|endoftext|>"} encodes as its 13 bytes.
 */
public final class ByteTokenizer implements Tokenizer {
    /** The name {@link Tokenizer#byName} takes. */
    public static final String NAME = "bytes";
    /** One id per byte value. */
    public static final int VOCAB_SIZE = 256;

    private static final ByteTokenizer INSTANCE = new ByteTokenizer();

    private ByteTokenizer() {}

    /** The shared instance (it holds no state). */
    public static ByteTokenizer get() {
        return INSTANCE;
    }

    @Override
    public int[] encode(String text) {
        byte[] bytes = text.getBytes(StandardCharsets.UTF_8);
        int[] ids = new int[bytes.length];
        for (int i = 0; i < bytes.length; i++) {
            ids[i] = bytes[i] & 0xff;
        }
        return ids;
    }

    /** The same as {@link #encode(String)}: there is no end-of-text id to allow. */
    @Override
    public int[] encode(String text, boolean allowEndOfText) {
        return encode(text);
    }

    @Override
    public String decode(int[] ids) {
        byte[] bytes = new byte[ids.length];
        for (int i = 0; i < ids.length; i++) {
            if (ids[i] < 0 || ids[i] >= VOCAB_SIZE) {
                throw new IllegalArgumentException("ByteTokenizer.decode: id " + ids[i] + " at position " + i
                        + " is not a byte (ids are 0..255)");
            }
            bytes[i] = (byte) ids[i];
        }
        return GPT2Tokenizer.decodeUtf8(bytes);
    }

    @Override
    public int vocabSize() {
        return VOCAB_SIZE;
    }

    /** -1: bytes have no end-of-text id. */
    @Override
    public int eotToken() {
        return -1;
    }

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public String toString() {
        return "ByteTokenizer(UTF-8 bytes, vocab 256)";
    }
}
