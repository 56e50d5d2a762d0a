package org.ddp4j.data;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import org.ddp4j.tensor.DType;
import org.ddp4j.tensor.Generator;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** TokenWindows: windows are the file's tokens, y is x shifted by one, ranks differ, a resumed run equals an uninterrupted one. */
class TokenWindowsTest {
    private static final int T = 8;
    private static final int B = 4;

    @TempDir
    Path dir;

    private TokenFile file(int length) {
        int[] ids = new int[length];
        for (int i = 0; i < length; i++) {
            ids[i] = (i * 7919 + 3) % 50257; // distinct for i < 50257: a window's ids name its start
        }
        Path bin = dir.resolve("train" + length + ".bin");
        TokenFile.write(bin, ids);
        return TokenFile.open(bin);
    }

    @Test
    void windowsAreTheFilesTokensAndYIsXShiftedByOne() {
        TokenFile tokens = file(1000);
        TokenWindows windows = new TokenWindows(tokens, T, B, 1337, 0);
        assertEquals(1000 - T, windows.windowCount());
        for (int step = 0; step < 3; step++) {
            long[] starts = windows.windowStarts(step);
            try (Batch batch = windows.next()) {
                assertArrayEquals(new long[] {B, T}, batch.inputs().shape());
                assertArrayEquals(new long[] {B, T}, batch.labels().shape());
                assertEquals(DType.INT64, batch.inputs().dtype());
                assertEquals(DType.INT64, batch.labels().dtype());
                long[] x = batch.inputs().toLongArray();
                long[] y = batch.labels().toLongArray();
                for (int b = 0; b < B; b++) {
                    assertTrue(starts[b] >= 0 && starts[b] < windows.windowCount(), "start " + starts[b]);
                    for (int t = 0; t < T; t++) {
                        assertEquals(tokens.get(starts[b] + t), x[b * T + t], "x[" + b + "][" + t + "]");
                        assertEquals(tokens.get(starts[b] + t + 1), y[b * T + t], "y[" + b + "][" + t + "]");
                        if (t < T - 1) {
                            assertEquals(x[b * T + t + 1], y[b * T + t], "y is x shifted by one");
                        }
                    }
                }
            }
        }
        assertEquals(3, windows.step());
    }

    @Test
    void startsCoverEveryWindowIncludingTheLastOne() {
        // 12 tokens, T = 8: nanoGPT's randint(len - T) gives starts 0..3; the window at 3 ends at the last token.
        TokenWindows windows = new TokenWindows(file(T + 4), T, B, 5, 0);
        boolean[] seen = new boolean[4];
        for (int step = 0; step < 50; step++) {
            for (long s : windows.windowStarts(step)) {
                seen[(int) s] = true;
            }
        }
        assertArrayEquals(new boolean[] {true, true, true, true}, seen);
        // The smallest file: one window, block_size + 1 tokens.
        TokenWindows one = new TokenWindows(file(T + 1), T, 2, 5, 0);
        assertArrayEquals(new long[] {0, 0}, one.windowStarts(0));
    }

    @Test
    void ranksDrawDifferentWindowsAndTheSameRankTheSame() {
        TokenFile tokens = file(5000);
        List<long[]> rank0 = new ArrayList<>();
        List<long[]> rank1 = new ArrayList<>();
        for (int step = 0; step < 5; step++) {
            rank0.add(new TokenWindows(tokens, T, B, 1337, 0).windowStarts(step));
            rank1.add(new TokenWindows(tokens, T, B, 1337, 1).windowStarts(step));
            assertFalse(Arrays.equals(rank0.get(step), rank1.get(step)), "step " + step);
            assertArrayEquals(rank0.get(step), new TokenWindows(tokens, T, B, 1337, 0).windowStarts(step), "reproducible");
            assertFalse(Arrays.equals(rank0.get(step), new TokenWindows(tokens, T, B, 1338, 0).windowStarts(step)),
                    "another seed, other windows");
        }
        assertFalse(Arrays.equals(rank0.get(0), rank0.get(1)), "each step its own windows");
    }

    @Test
    void resumeFromAStateDictGivesTheUninterruptedBatches() throws Exception {
        TokenFile tokens = file(3000);
        TokenWindows uninterrupted = new TokenWindows(tokens, T, B, 42, 1);
        List<long[]> expected = new ArrayList<>();
        for (int i = 0; i < 10; i++) {
            try (Batch batch = uninterrupted.next()) {
                expected.add(batch.inputs().toLongArray());
            }
        }
        TokenWindows first = new TokenWindows(tokens, T, B, 42, 1);
        for (int i = 0; i < 4; i++) {
            first.next().close();
        }
        ObjectMapper json = new ObjectMapper();
        @SuppressWarnings("unchecked")
        Map<String, Object> saved = json.readValue(json.writeValueAsString(first.stateDict()), Map.class);
        assertEquals(4, ((Number) saved.get("step")).intValue());

        TokenWindows resumed = new TokenWindows(tokens, T, B, 42, 1);
        resumed.loadStateDict(saved);
        for (int i = 4; i < 10; i++) {
            try (Batch batch = resumed.next()) {
                assertArrayEquals(expected.get(i), batch.inputs().toLongArray(), "batch " + i);
            }
        }
        assertEquals(10, resumed.step());

        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> new TokenWindows(tokens, T, B, 43, 1).loadStateDict(saved));
        assertTrue(e.getMessage().contains("seed is 42") && e.getMessage().contains("43"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> new TokenWindows(tokens, T + 1, B, 42, 1).loadStateDict(saved));
        assertThrows(IllegalArgumentException.class, () -> resumed.loadStateDict(Map.of("seed", 42)));
    }

    @Test
    void refusesAFileShorterThanOneWindowNamingTheSizes() {
        TokenFile tokens = file(T);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> new TokenWindows(tokens, T, B, 1, 0));
        assertTrue(e.getMessage().contains("holds 8 tokens") && e.getMessage().contains("block_size + 1 = 9"),
                e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> new TokenWindows(file(100), 0, B, 1, 0));
        assertThrows(IllegalArgumentException.class, () -> new TokenWindows(file(100), T, 0, 1, 0));
        assertThrows(IllegalArgumentException.class, () -> new TokenWindows(file(100), T, B, 1, -1));
    }

    @Test
    void startsBeyondTwoToThe31AreUniformDraws() {
        long bound = 5_000_000_000L;
        Generator generator = new Generator(7);
        long max = 0;
        for (int i = 0; i < 2000; i++) {
            long s = TokenWindows.uniform(generator, bound);
            assertTrue(s >= 0 && s < bound, "draw " + s);
            max = Math.max(max, s);
        }
        assertTrue(max > Integer.MAX_VALUE, "draws reach past 2^31: " + max);
    }
}
