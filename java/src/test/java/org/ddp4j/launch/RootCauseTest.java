package org.ddp4j.launch;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.ddp4j.distributed.WorkerError;
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
    void aStoppedWorkerPublishedElsewhereWinsOverThePlainExitOfTheRankThatWaited() throws Exception {
        HashStore store = new HashStore();
        String hung = RootCause.describeHung(1, 1, 0, 4242, 'T');
        RootCause.publishHung(store, 1, List.of(hung));
        assertEquals(hung, RootCause.decide(store, 1, System.currentTimeMillis(),
                "rank 0 (node 0, local rank 0) exited with code 1", 2, () -> null, () -> null, () -> false, MAX_WAIT));
    }

    @Test
    void aLauncherThatStoodStillClaimsItsOwnPause() throws Exception {
        HashStore store = new HashStore();
        String paused = "the launcher of node 0 (10.77.0.1) was not running for 25 s";
        assertEquals(paused, RootCause.decide(store, 1, System.currentTimeMillis(),
                "rank 0 (node 0, local rank 0) exited with code 1", 2, () -> "lost node 1 (10.77.0.2)", () -> paused,
                () -> true, MAX_WAIT));
    }

    @Test
    void aFailureNamingARemotePeerWaitsPastTheGraceForThatNodesSlowReport() throws Exception {
        HashStore store = new HashStore();
        long t = System.currentTimeMillis();
        String cause = "the network between node 1 (10.77.0.2) and node 0 (10.77.0.1): ...";
        // Node 0's rank saw its connection closed; node 1's report of the timeout before it comes 6 s later.
        CompletableFuture<String> node0 = CompletableFuture.supplyAsync(() -> {
            try {
                return RootCause.decide(store, 1, t + 50, "rank 0 (node 0, local rank 0) exited with code 1", 2, true,
                        () -> null, () -> null, () -> false, MAX_WAIT);
            } catch (InterruptedException e) {
                throw new IllegalStateException(e);
            }
        });
        Thread.sleep(6000);
        assertFalse(node0.isDone(), "node 0 gave up waiting for node 1's report");
        assertEquals(cause, RootCause.decide(store, 1, t, cause, 2, true, () -> null, () -> null, () -> false, MAX_WAIT));
        assertEquals(cause, node0.get(20, TimeUnit.SECONDS));
    }

    @Test
    void readsTheCollectiveTimeoutAndThePeerFromAWorkersLastLines() {
        List<String> tail = List.of("Exception in thread \"main\" org.ddp4j.distributed.DistributedTimeoutException:"
                + " allReduce(SUM) of 1 float32 element (#615) timed out after 8 s on rank 1 waiting for peer rank 0:"
                + " no data from it arrived [gloo: Read timeout [10.77.0.1]:56738]",
                "\tat org.ddp4j.internal.WorkNatives.synchronize(Native Method)");
        RootCause.Timeout timeout = RootCause.collectiveTimeout(tail);
        assertEquals(new RootCause.Timeout("allReduce(SUM) of 1 float32 element (#615)", "8 s", 0, false), timeout);
        assertEquals(0, RootCause.peerNamedIn(tail));
        // a demo prints the message alone, after its name
        assertEquals(1, RootCause.peerNamedIn(List.of("ConvNetDemo: error: allReduce(AVG) of 29,045 float32 elements"
                + " (#325, DDP bucket 1 of 1) failed on rank 0: peer rank 1 may have died or closed its process group"
                + " [gloo: Read error [10.77.0.2]:2183: Connection reset by peer]")));
        assertEquals(-1, RootCause.peerNamedIn(List.of("ConvNetDemo: error: --epochs must be positive")));
        assertEquals(null, RootCause.collectiveTimeout(List.of("rank 1 fails now")));
        assertEquals("the network between node 1 (10.77.0.2) and node 0 (10.77.0.1): rank 1 (node 1, local rank 0)"
                + " timed out after 8 s waiting for peer rank 0's data in allReduce(SUM) of 1 float32 element (#615),"
                + " while the launcher of node 0 (10.77.0.1) was alive (its keep-alive arrived 0.5 s ago) and no worker"
                + " was stopped: the data did not get through - a network problem between the two hosts (packet loss,"
                + " a firewall, the MTU), not a rank that did not take part (unless one was busy outside collectives"
                + " for longer than the timeout)",
                RootCause.describeUnreachable("rank 1 (node 1, local rank 0) exited with code 1", "node 1 (10.77.0.2)",
                        "node 0 (10.77.0.1)", "the launcher of node 0 (10.77.0.1) was alive (its keep-alive arrived 0.5 s ago)",
                        timeout));
        // The same from the worker's error file, the facts as fields: no message is read.
        WorkerError recorded = new WorkerError(1, "org.ddp4j.distributed.DistributedTimeoutException", "(any words)", true,
                0, true, "allReduce(SUM) of 1 float32 element (#615)", 8000, false, List.of(), 0, 1, 42);
        assertEquals(timeout, RootCause.Timeout.of(recorded));
        assertEquals(new RootCause.Timeout("barrier (#3)", "1.5 s", -1, true), RootCause.Timeout.of(new WorkerError(1,
                "org.ddp4j.distributed.DistributedTimeoutException", "", true, -1, true, "barrier (#3)", 1500, true,
                List.of(), 0, 1, 42)));
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

    /** What tells a worker that failed because of a peer from one that failed on its own (both given a missing file). */
    @Test
    void aWorkerWithoutADistributedErrorFailedOnItsOwn() {
        assertTrue(RootCause.failedOnAPeer(List.of("Exception in thread \"main\" org.ddp4j.distributed.DistributedException:"
                + " allReduce(SUM) of 4 float32 elements (#3) on rank 1: abandoned: rank 0 (pid 7) exited without closing"
                + " its process group")));
        assertTrue(RootCause.failedOnAPeer(List.of("\tat x.y(Z.java:1)",
                "org.ddp4j.distributed.DistributedTimeoutException: rank 1 timed out after 8 s waiting for peer rank 0")));
        assertTrue(RootCause.failedOnAPeer(List.of("ConvNetDemo: error: allReduce failed on rank 1: peer rank 0 died")));
        assertFalse(RootCause.failedOnAPeer(List.of("ResNetSynthetic: error: /nonexistent: no such file")));
        assertFalse(RootCause.failedOnAPeer(List.of("Exception in thread \"main\" java.lang.IllegalArgumentException:"
                + " conv2d: input [2, 1, 64, 64] has 1 channels")));
        assertFalse(RootCause.failedOnAPeer(List.of()));
    }
}
