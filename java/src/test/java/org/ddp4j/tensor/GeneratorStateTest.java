package org.ddp4j.tensor;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/** The generator's stream is SplittableRandom's, and a saved state continues it exactly. */
class GeneratorStateTest {
    @Test
    void theStreamIsSplittableRandomsForTheSameSeed() {
        for (long seed : new long[] {0, 1, -7, 123456789L}) {
            Generator g = new Generator(seed);
            SplittableRandom r = new SplittableRandom(seed);
            for (int i = 0; i < 200; i++) {
                assertEquals((float) (-1 + 2 * r.nextDouble()), g.uniform(-1f, 1f), "uniform draw " + i);
                int bound = 1 + i * 37 % 1000; // powers of two and others, so both branches of the bound run
                assertEquals(r.nextInt(bound), g.nextInt(bound), "nextInt(" + bound + ") draw " + i);
            }
            int[] expected = new int[50];
            for (int i = 0; i < 50; i++) {
                expected[i] = i;
            }
            for (int i = 49; i > 0; i--) {
                int j = r.nextInt(i + 1);
                int t = expected[i];
                expected[i] = expected[j];
                expected[j] = t;
            }
            assertArrayEquals(expected, g.permutation(50));
        }
    }

    @Test
    void aRestoredStateContinuesTheStream() {
        Generator g = new Generator(42);
        g.normal(17);
        byte[] state = g.getState();
        float[] next = g.normal(9);
        int[] perm = g.permutation(20);
        Generator other = new Generator(0).setState(state);
        assertArrayEquals(next, other.normal(9));
        assertArrayEquals(perm, other.permutation(20));
    }

    @Test
    void theDefaultGeneratorsStateRoundTrips() {
        byte[] saved = Generator.getRngState();
        try {
            Generator.manualSeedAll(3);
            byte[] state = Generator.getRngState();
            float a = Generator.defaultGenerator().uniform(0f, 1f);
            Generator.setRngState(state);
            assertEquals(a, Generator.defaultGenerator().uniform(0f, 1f));
        } finally {
            Generator.setRngState(saved);
        }
    }

    @Test
    void aForeignStateIsRefused() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> new Generator(0).setState(new byte[] {1, 2, 3}));
        assertTrue(e.getMessage().contains("expected the 9 bytes that getState() writes"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> new Generator(0).nextInt(0));
    }
}
