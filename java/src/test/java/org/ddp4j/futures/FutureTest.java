package org.ddp4j.futures;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Future's contract, which DDP's hook ordering relies on: callbacks run on the waiting thread when
 * it first waits (not before), each at most once, in chain order; a failure is kept and thrown
 * again by every later wait, and skips the callbacks after it.
 */
class FutureTest {
    @Test
    void callbacksRunOnceOnTheFirstWaitInChainOrder() {
        List<String> ran = new ArrayList<>();
        Future<Integer> start = Future.deferred(() -> {
            ran.add("start:" + Thread.currentThread().getName());
            return 1;
        });
        Future<Integer> chained = start.then(f -> {
            ran.add("then1");
            return f.value() + 1;
        }).then(f -> {
            ran.add("then2");
            return f.value() * 10;
        });
        assertTrue(ran.isEmpty(), "nothing runs before a wait");
        assertFalse(chained.isDone());
        assertEquals(20, chained.value());
        assertEquals(20, chained.value());
        assertEquals(List.of("start:" + Thread.currentThread().getName(), "then1", "then2"), ran);
        assertTrue(chained.isDone() && start.isDone());
        assertSame("x", Future.completed("x").value());
    }

    @Test
    void aFailureIsKeptAndSkipsTheCallbacksAfterIt() {
        int[] calls = {0};
        Future<Integer> failing = Future.deferred(() -> {
            calls[0]++;
            throw new IllegalStateException("peer gone");
        });
        Future<Integer> after = failing.then(f -> {
            calls[0] += 100;
            return 0;
        });
        IllegalStateException e = assertThrows(IllegalStateException.class, after::value);
        assertEquals("peer gone", e.getMessage());
        assertThrows(IllegalStateException.class, after::value);
        assertThrows(IllegalStateException.class, failing::value);
        assertEquals(1, calls[0]);
    }
}
