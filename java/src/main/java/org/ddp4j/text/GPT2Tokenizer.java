package org.ddp4j.text;

import com.knuddels.jtokkit.Encodings;
import com.knuddels.jtokkit.api.Encoding;
import com.knuddels.jtokkit.api.EncodingType;
import com.knuddels.jtokkit.api.IntArrayList;
import java.nio.ByteBuffer;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.StandardCharsets;

/**
 * GPT-2's byte-pair encoding: tiktoken's {@code get_encoding("gpt2")} ({@code r50k_base}, the ids
 * Hugging Face's {@code GPT2Tokenizer} gives), through JTokkit, whose jar carries the ranks (no
 * download). 50257 ids; {@code "<|endoftext|>"} is 50256. Thread-safe; one shared instance
 * ({@link #get()}).
 */
public final class GPT2Tokenizer implements Tokenizer {
    /** The name {@link Tokenizer#byName} takes. */
    public static final String NAME = "gpt2";
    /** GPT-2's vocabulary: 50000 merges, 256 bytes and {@code <|endoftext|>}. */
    public static final int VOCAB_SIZE = 50257;
    /** The id of {@code "<|endoftext|>"}. */
    public static final int EOT_TOKEN = 50256;
    /** The text of {@link #EOT_TOKEN}. */
    public static final String EOT_TEXT = "<|endoftext|>";

    // The registry parses the ranks file once (about 0.2 s); holder idiom so that it happens on first use.
    private static final class Holder {
        static final GPT2Tokenizer INSTANCE =
                new GPT2Tokenizer(Encodings.newLazyEncodingRegistry().getEncoding(EncodingType.R50K_BASE));
    }

    private final Encoding encoding;

    private GPT2Tokenizer(Encoding encoding) {
        this.encoding = encoding;
    }

    /** The shared instance. */
    public static GPT2Tokenizer get() {
        return Holder.INSTANCE;
    }

    @Override
    public int[] encode(String text) {
        return encoding.encodeOrdinary(text).toArray();
    }

    @Override
    public int[] encode(String text, boolean allowEndOfText) {
        if (!allowEndOfText) {
            return encode(text);
        }
        // JTokkit's encode() refuses special tokens, so split at them as tiktoken does (each piece ordinary).
        IntArrayList out = new IntArrayList();
        int from = 0;
        for (int at = text.indexOf(EOT_TEXT); at >= 0; at = text.indexOf(EOT_TEXT, from)) {
            appendOrdinary(out, text.substring(from, at));
            out.add(EOT_TOKEN);
            from = at + EOT_TEXT.length();
        }
        appendOrdinary(out, text.substring(from));
        return out.toArray();
    }

    private void appendOrdinary(IntArrayList out, String piece) {
        if (!piece.isEmpty()) {
            IntArrayList ids = encoding.encodeOrdinary(piece);
            for (int i = 0; i < ids.size(); i++) {
                out.add(ids.get(i));
            }
        }
    }

    @Override
    public String decode(int[] ids) {
        IntArrayList list = new IntArrayList(ids.length);
        for (int i = 0; i < ids.length; i++) {
            if (ids[i] < 0 || ids[i] >= VOCAB_SIZE) {
                throw new IllegalArgumentException("GPT2Tokenizer.decode: id " + ids[i] + " at position " + i
                        + " is not a GPT-2 token (ids are 0.." + (VOCAB_SIZE - 1) + ")");
            }
            list.add(ids[i]);
        }
        return decodeUtf8(encoding.decodeBytes(list));
    }

    /** UTF-8 with U+FFFD for malformed bytes (a token may end inside a character). */
    static String decodeUtf8(byte[] bytes) {
        try {
            return StandardCharsets.UTF_8.newDecoder()
                    .onMalformedInput(CodingErrorAction.REPLACE)
                    .onUnmappableCharacter(CodingErrorAction.REPLACE)
                    .decode(ByteBuffer.wrap(bytes))
                    .toString();
        } catch (CharacterCodingException e) {
            throw new IllegalStateException("cannot happen: the decoder replaces malformed input", e);
        }
    }

    @Override
    public int vocabSize() {
        return VOCAB_SIZE;
    }

    @Override
    public int eotToken() {
        return EOT_TOKEN;
    }

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public String toString() {
        return "GPT2Tokenizer(r50k_base, vocab " + VOCAB_SIZE + ")";
    }
}
