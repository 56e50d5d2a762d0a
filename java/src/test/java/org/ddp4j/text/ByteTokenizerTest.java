package org.ddp4j.text;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/** ByteTokenizer: UTF-8 bytes as ids, exact round trips; Tokenizer.byName. */
class ByteTokenizerTest {
    private static final ByteTokenizer BYTES = ByteTokenizer.get();

    @Test
    void idsAreTheUtf8BytesAndDecodeRoundTrips() throws IOException {
        assertArrayEquals(new int[] {104, 105, 10, 0xc3, 0xa9, 0xf0, 0x9f, 0x98, 0x80}, BYTES.encode("hi\né😀"));
        for (GPT2TokenizerGoldenTest.Case c : GPT2TokenizerGoldenTest.cases()) {
            int[] ids = BYTES.encode(c.text());
            assertEquals(c.text().getBytes(StandardCharsets.UTF_8).length, ids.length, c.name());
            assertEquals(c.text(), BYTES.decode(ids), c.name());
            assertArrayEquals(ids, BYTES.encode(c.text(), true), "no special ids in bytes: " + c.name());
        }
        assertEquals(256, BYTES.vocabSize());
        assertEquals(-1, BYTES.eotToken());
    }

    @Test
    void badIdsAreNamed() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> BYTES.decode(new int[] {65, 256}));
        assertTrue(e.getMessage().contains("256") && e.getMessage().contains("position 1"), e.getMessage());
    }

    @Test
    void byName() {
        assertSame(GPT2Tokenizer.get(), Tokenizer.byName("gpt2"));
        assertSame(GPT2Tokenizer.get(), Tokenizer.byName("GPT2"));
        assertSame(ByteTokenizer.get(), Tokenizer.byName("bytes"));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Tokenizer.byName("bpe"));
        assertTrue(e.getMessage().contains("'bpe'") && e.getMessage().contains("gpt2") && e.getMessage().contains("bytes"),
                e.getMessage());
    }
}
