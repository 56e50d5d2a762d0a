package org.ddp4j.text;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.InputStream;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * GPT2Tokenizer against tiktoken's r50k_base ids (golden/gpt2_tokens.json, scripts/golden/gpt2_tokens_golden.py):
 * Unicode, emoji, CJK, whitespace runs, tabs and newlines, digits, contractions, code, and "<|endoftext|>" both as
 * ordinary text and as the special id.
 */
class GPT2TokenizerGoldenTest {
    private static final GPT2Tokenizer TOKENIZER = GPT2Tokenizer.get();

    record Case(String name, String text, int[] ids, int[] idsAllowEot) {}

    static List<Case> cases() throws IOException {
        try (InputStream in = GPT2TokenizerGoldenTest.class.getResourceAsStream("/golden/gpt2_tokens.json")) {
            JsonNode root = new ObjectMapper().readTree(in);
            assertEquals(50257, root.get("n_vocab").asInt());
            assertEquals(50256, root.get("eot_token").asInt());
            List<Case> out = new ArrayList<>();
            for (JsonNode c : root.get("cases")) {
                out.add(new Case(c.get("name").asText(), c.get("text").asText(), ints(c.get("ids")),
                        c.has("ids_allow_eot") ? ints(c.get("ids_allow_eot")) : null));
            }
            return out;
        }
    }

    private static int[] ints(JsonNode list) {
        int[] out = new int[list.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = list.get(i).asInt();
        }
        return out;
    }

    @Test
    void encodeGivesTiktokensIdsAndDecodeRoundTrips() throws IOException {
        List<Case> cases = cases();
        assertTrue(cases.size() >= 20, "the golden file has its cases");
        int withEot = 0;
        for (Case c : cases) {
            assertArrayEquals(c.ids(), TOKENIZER.encode(c.text()), c.name());
            assertArrayEquals(c.ids(), TOKENIZER.encode(c.text(), false), c.name());
            assertEquals(c.text(), TOKENIZER.decode(c.ids()), c.name());
            if (c.idsAllowEot() != null) {
                withEot++;
                assertArrayEquals(c.idsAllowEot(), TOKENIZER.encode(c.text(), true), c.name() + " with <|endoftext|>");
                assertEquals(c.text(), TOKENIZER.decode(c.idsAllowEot()), c.name());
            } else {
                assertArrayEquals(c.ids(), TOKENIZER.encode(c.text(), true), c.name() + ": no <|endoftext|> in it");
            }
        }
        assertTrue(withEot > 0, "a case holds <|endoftext|>");
    }

    @Test
    void vocabularyAndEndOfText() {
        assertEquals(50257, TOKENIZER.vocabSize());
        assertEquals(50256, TOKENIZER.eotToken());
        assertArrayEquals(new int[] {50256}, TOKENIZER.encode("<|endoftext|>", true));
        assertEquals("<|endoftext|>", TOKENIZER.decode(new int[] {50256}));
        assertEquals("gpt2", TOKENIZER.name());
    }

    @Test
    void decodeOfACutCharacterGivesReplacementAndBadIdsAreNamed() {
        int[] ids = TOKENIZER.encode("日");
        assertTrue(ids.length > 1, "a CJK character takes several byte tokens: " + ids.length);
        assertEquals("\uFFFD", TOKENIZER.decode(new int[] {ids[0]}).substring(0, 1));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> TOKENIZER.decode(new int[] {1, 50257}));
        assertTrue(e.getMessage().contains("50257") && e.getMessage().contains("position 1"), e.getMessage());
    }
}
