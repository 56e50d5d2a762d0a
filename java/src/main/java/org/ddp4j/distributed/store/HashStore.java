package org.ddp4j.distributed.store;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import org.ddp4j.distributed.DistributedException;
import org.ddp4j.distributed.DistributedTimeoutException;

/**
 * An in-process {@link Store}: a map guarded by a lock, shared by threads of one JVM (for example
 * ranks run as threads in a test). Mirrors PyTorch's {@code torch.distributed.HashStore}.
 *
 * <p>Thread-safe. {@link #get} and {@link #waitFor} block on a condition, without polling, until
 * the keys are set or the timeout passes. Counters written by {@link #add} are stored as decimal
 * ASCII, so {@code get} on a counter returns, for example, {@code "3"}.
 */
public final class HashStore implements Store {

    /** The timeout of {@link #HashStore()}: 300 seconds, PyTorch's default store timeout. */
    public static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(300);

    private final ReentrantLock lock = new ReentrantLock();
    private final Condition changed = lock.newCondition();
    private final Map<String, byte[]> map = new HashMap<>();
    private final Duration timeout;
    private final String name;
    private boolean shutDown;

    /** An empty store whose blocking calls wait up to {@link #DEFAULT_TIMEOUT} (300 s). */
    public HashStore() {
        this(DEFAULT_TIMEOUT);
    }

    /**
     * An empty store whose blocking calls wait up to {@code timeout}.
     *
     * @param timeout how long {@link #get} and {@link #waitFor(List)} wait; zero means do not wait
     * @throws IllegalArgumentException if {@code timeout} is negative
     */
    public HashStore(Duration timeout) {
        this(timeout, "HashStore");
    }

    /** A store that names itself {@code name} in its error messages (the TcpStore server's state). */
    HashStore(Duration timeout, String name) {
        this.timeout = StoreSupport.checkTimeout(timeout);
        this.name = name;
    }

    /** {@inheritDoc} The value is copied; later changes to the array do not affect the store. */
    @Override
    public void set(String key, byte[] value) {
        StoreSupport.checkKey(key);
        byte[] copy = value.clone();
        lock.lock();
        try {
            checkOpen();
            map.put(key, copy);
            changed.signalAll();
        } finally {
            lock.unlock();
        }
    }

    /**
     * {@inheritDoc}
     *
     * @throws DistributedTimeoutException naming the key, if it is not set within {@link #timeout()}
     */
    @Override
    public byte[] get(String key) {
        return get(key, timeout);
    }

    /** {@link #get(String)} with an explicit timeout. */
    byte[] get(String key, Duration waitTimeout) {
        byte[] value = tryGet(key, waitTimeout);
        if (value == null) {
            throw new DistributedTimeoutException(StoreSupport.timeoutMessage(waitTimeout, List.of(key), name));
        }
        return value;
    }

    /** Waits up to {@code waitTimeout} for {@code key}; returns its value, or null on timeout (for the TcpStore server). */
    byte[] tryGet(String key, Duration waitTimeout) {
        StoreSupport.checkKey(key);
        lock.lock();
        try {
            if (!awaitLocked(List.of(key), waitTimeout).isEmpty()) {
                return null;
            }
            return map.get(key).clone();
        } finally {
            lock.unlock();
        }
    }

    /** Waits up to {@code waitTimeout} for the keys; returns those still missing (empty on success). */
    List<String> tryWait(List<String> keys, Duration waitTimeout) {
        StoreSupport.checkKeys(keys);
        lock.lock();
        try {
            return awaitLocked(keys, waitTimeout);
        } finally {
            lock.unlock();
        }
    }

    /**
     * {@inheritDoc}
     *
     * @throws DistributedException if the key holds a value that is not a decimal counter, or the
     *     sum overflows a {@code long}
     */
    @Override
    public long add(String key, long delta) {
        StoreSupport.checkKey(key);
        lock.lock();
        try {
            checkOpen();
            long value = StoreSupport.addCounter(key, map.get(key), delta, name);
            map.put(key, StoreSupport.encodeCounter(value));
            changed.signalAll();
            return value;
        } finally {
            lock.unlock();
        }
    }

    /** {@inheritDoc} An absent key with a non-empty {@code expected} is left absent and {@code expected} is returned, as in PyTorch. */
    @Override
    public byte[] compareSet(String key, byte[] expected, byte[] desired) {
        StoreSupport.checkKey(key);
        byte[] want = desired.clone();
        lock.lock();
        try {
            checkOpen();
            byte[] current = map.get(key);
            if (current == null) {
                if (expected.length == 0) {
                    map.put(key, want);
                    changed.signalAll();
                    return want.clone();
                }
                return expected.clone();
            }
            if (Arrays.equals(current, expected)) {
                map.put(key, want);
                changed.signalAll();
                return want.clone();
            }
            return current.clone();
        } finally {
            lock.unlock();
        }
    }

    /**
     * {@inheritDoc}
     *
     * @param timeout how long to wait; zero or negative checks once
     * @throws DistributedTimeoutException naming the keys still missing after {@code timeout}
     * @throws DistributedException if the waiting thread is interrupted
     */
    @Override
    public void waitFor(List<String> keys, Duration timeout) {
        List<String> missing = tryWait(keys, timeout);
        if (!missing.isEmpty()) {
            throw new DistributedTimeoutException(StoreSupport.timeoutMessage(timeout, missing, name));
        }
    }

    @Override
    public boolean check(List<String> keys) {
        StoreSupport.checkKeys(keys);
        lock.lock();
        try {
            checkOpen();
            for (String k : keys) {
                if (!map.containsKey(k)) {
                    return false;
                }
            }
            return true;
        } finally {
            lock.unlock();
        }
    }

    @Override
    public boolean deleteKey(String key) {
        StoreSupport.checkKey(key);
        lock.lock();
        try {
            checkOpen();
            return map.remove(key) != null;
        } finally {
            lock.unlock();
        }
    }

    /** Deletes {@code key} if it still holds {@code value} (a connection's claim, as it closes); false after shutdown. */
    boolean deleteIfEquals(String key, byte[] value) {
        lock.lock();
        try {
            if (shutDown || !Arrays.equals(map.get(key), value)) {
                return false;
            }
            map.remove(key);
            return true;
        } finally {
            lock.unlock();
        }
    }

    /** The number of keys in the store. Mirrors {@code Store.num_keys}. */
    public int numKeys() {
        lock.lock();
        try {
            return map.size();
        } finally {
            lock.unlock();
        }
    }

    @Override
    public Duration timeout() {
        return timeout;
    }

    /**
     * Does nothing: an in-process store holds no outside resource, and other threads (ranks) that
     * share it may still be using it. Let it be garbage-collected instead.
     */
    @Override
    public void close() {}

    /** Wakes every waiter with an error and refuses further calls (the TcpStore server's shutdown). */
    void shutDown() {
        lock.lock();
        try {
            shutDown = true;
            changed.signalAll();
        } finally {
            lock.unlock();
        }
    }

    private void checkOpen() {
        if (shutDown) {
            throw new DistributedException(name + " has been shut down");
        }
    }

    /** Waits (lock held) until the keys exist or the deadline passes; returns the keys still missing. */
    private List<String> awaitLocked(List<String> keys, Duration waitTimeout) {
        long deadline = StoreSupport.deadlineNanos(waitTimeout);
        while (true) {
            checkOpen();
            List<String> missing = missingLocked(keys);
            long remaining = deadline - System.nanoTime();
            if (missing.isEmpty() || remaining <= 0) {
                return missing;
            }
            try {
                changed.awaitNanos(Math.min(remaining, TimeUnit.SECONDS.toNanos(60)));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new DistributedException("Interrupted while waiting for keys " + StoreSupport.quote(missing)
                        + " in " + name);
            }
        }
    }

    private List<String> missingLocked(List<String> keys) {
        List<String> missing = new ArrayList<>();
        for (String k : keys) {
            if (!map.containsKey(k)) {
                missing.add(k);
            }
        }
        return missing;
    }
}
