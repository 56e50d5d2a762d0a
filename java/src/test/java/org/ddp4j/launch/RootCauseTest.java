package org.ddp4j.launch;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.ddp4j.distributed.store.HashStore;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The root-cause rules of {@link RootCause}, on one in-process store shared by simulated launchers. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class RootCauseTest {

    private static final Duration MAX_WAIT = Duration.ofSeconds(30);

    @Test
    void describesSignalDeathsAndExitCodes() {
        assertEquals("rank 1 (node 1, local rank 0) exited with code 3", RootCause.describe(1, 1, 0, 3));
        assertTrue(RootCause.describe(1, 1, 0, 137).startsWith("rank 1 (node 1, local rank 0) was killed by signal 9"));
        assertTrue(RootCause.describe(4, 2, 1, 143).startsWith("rank 4 (node 2, local rank 1) was killed by signal 15"));
        assertEquals("rank 0 (node 0, local rank 0) exited with code 128", RootCause.describe(0, 0, 0, 128));
        assertTrue(RootCause.killedBySignal(137));
        assertFalse(RootCause.killedBySignal(1));
        assertFalse(RootCause.killedBySignal(255));
    }

    @Test
    void aSignalDeathPublishedDuringTheGraceWinsOverAnEarlierPlainExit() throws Exception {
        HashStore store = new HashStore();
        long now = System.currentTimeMillis();
        // Node 0's rank 0 exits 1 first (its collective failed); node 1 then reports rank 1's SIGKILL.
        CompletableFuture<String> node0 = CompletableFuture.supplyAsync(() -> decide(store, 1, now,
                "rank 0 (node 0, local rank 0) exited with code 1"));
        Thread.sleep(300);
        String killed = RootCause.describe(1, 1, 0, 137);
        String node1 = RootCause.decide(store, 137, now + 5, killed, () -> null, () -> false, MAX_WAIT);
        assertEquals(killed, node1);
        assertEquals(killed, node0.get(20, TimeUnit.SECONDS));
    }

    @Test
    void amongPlainExitsTheOneThatExitedFirstWinsWhateverTheOrderOfPublication() throws Exception {
        HashStore store = new HashStore();
        long t = System.currentTimeMillis();
        String cause = "rank 1 (node 1, local rank 0) exited with code 3";
        String consequence = "rank 0 (node 0, local rank 0) exited with code 1";
        // The consequence reaches the store first, but exited 40 ms after the cause.
        CompletableFuture<String> node0 = CompletableFuture.supplyAsync(() -> decide(store, 1, t + 40, consequence));
        Thread.sleep(200);
        CompletableFuture<String> node1 = CompletableFuture.supplyAsync(() -> decide(store, 3, t, cause));
        assertEquals(cause, node0.get(20, TimeUnit.SECONDS));
        assertEquals(cause, node1.get(20, TimeUnit.SECONDS));
    }

    @Test
    void aLostNodeDeclaredWhileWaitingIsTheRootCause() throws Exception {
        HashStore store = new HashStore();
        String lost = "lost node 1 (10.77.0.2): no keep-alive for 20 s";
        long t0 = System.nanoTime();
        // Node 1's keep-alive is late, so the wait goes on past the grace until the verdict comes.
        String got = RootCause.decide(store, 1, System.currentTimeMillis(), "rank 0 (node 0, local rank 0) exited with code 1",
                () -> System.nanoTime() - t0 > TimeUnit.SECONDS.toNanos(5) ? lost : null, () -> true, MAX_WAIT);
        assertEquals(lost, got);
        assertTrue(System.nanoTime() - t0 >= TimeUnit.SECONDS.toNanos(5));
    }

    @Test
    void theFirstClaimIsFinal() {
        HashStore store = new HashStore();
        assertEquals("a", RootCause.claim(store, "a"));
        assertEquals("a", RootCause.claim(store, "b"));
    }

    private static String decide(HashStore store, int code, long exitMillis, String description) {
        try {
            return RootCause.decide(store, code, exitMillis, description, () -> null, () -> false, MAX_WAIT);
        } catch (InterruptedException e) {
            throw new IllegalStateException(e);
        }
    }
}
