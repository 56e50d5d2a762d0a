package org.ddp4j.testing;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.opentest4j.AssertionFailedError;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The multi-rank helper's own bound: a rank that never returns fails the test, by name, instead of hanging CI. */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class RanksTest {

    @Test
    void aRankThatNeverReturnsFailsWithinTheBoundNamingIt() {
        CountDownLatch never = new CountDownLatch(1);
        long t0 = System.nanoTime();
        AssertionFailedError e = assertThrows(AssertionFailedError.class, () -> Ranks.collect(3, Duration.ofMillis(500),
                rank -> {
                    if (rank == 1) {
                        never.await(); // a collective whose peer never comes
                    }
                    if (rank == 2) {
                        throw new IllegalStateException("rank 2 gave up");
                    }
                    return rank;
                }));
        long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
        assertTrue(ms >= 500 && ms < 10_000, "failed after " + ms + " ms for a 500 ms bound");
        String m = e.getMessage();
        assertTrue(m.startsWith("rank 1 is still running after 500 ms"), m);
        assertTrue(m.contains("CountDownLatch.await"), "names where the rank is stuck: " + m);
        assertFalse(m.contains("rank 0 is still running"), m);
        assertTrue(m.contains("rank 2 failed: java.lang.IllegalStateException: rank 2 gave up"), m);
    }

    @Test
    void ranksThatFinishReturnTheirValuesInRankOrder() throws Exception {
        assertEquals(List.of(0, 10, 20), Ranks.run(3, rank -> rank * 10));
    }
}
