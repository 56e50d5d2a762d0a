package org.ddp4j.distributed.store;

import java.time.Duration;
import java.util.List;
import org.ddp4j.distributed.DistributedTimeoutException;

/**
 * A key-value store that ranks use to find each other: PyTorch's {@code torch.distributed.Store}.
 *
 * <p>Keys are strings, values are byte arrays. {@link #get} and {@link #waitFor} block until the
 * keys exist or the store's timeout passes, then throw {@link DistributedTimeoutException} naming
 * the keys that never appeared. Implementations: {@link TcpStore} (network, one server),
 * {@link FileStore} (a shared file), {@link HashStore} (one process), {@link PrefixStore}.
 */
public interface Store extends AutoCloseable {

    /** Sets {@code key} to {@code value}, replacing any old value and waking waiters. Mirrors {@code Store.set}. */
    void set(String key, byte[] value);

    /**
     * Returns the value of {@code key}, waiting up to {@link #timeout()} for it to be set.
     * Mirrors {@code Store.get}.
     *
     * @throws DistributedTimeoutException if the key is not set within the timeout
     */
    byte[] get(String key);

    /**
     * Atomically adds {@code delta} to the 64-bit counter at {@code key} (absent counts as 0) and
     * returns the new value. Mirrors {@code Store.add}.
     */
    long add(String key, long delta);

    /**
     * Sets {@code key} to {@code desired} if its current value equals {@code expected} (an empty
     * {@code expected} matches an absent key); returns the value now stored. Mirrors
     * {@code Store.compare_set}.
     */
    byte[] compareSet(String key, byte[] expected, byte[] desired);

    /**
     * Blocks until every key exists. Mirrors {@code Store.wait}.
     *
     * @throws DistributedTimeoutException naming the missing keys, after {@code timeout}
     */
    void waitFor(List<String> keys, Duration timeout);

    /** {@link #waitFor(List, Duration)} with the store's own timeout. */
    default void waitFor(List<String> keys) {
        waitFor(keys, timeout());
    }

    /** Returns whether every key exists, without waiting. Mirrors {@code Store.check}. */
    boolean check(List<String> keys);

    /** Deletes {@code key}; returns whether it existed. Mirrors {@code Store.delete_key}. */
    boolean deleteKey(String key);

    /** The timeout for blocking calls. */
    Duration timeout();

    /**
     * Claims {@code key} for as long as this client stays connected: atomically, if the key is
     * absent (or already holds {@code value}), sets it to {@code value} and ties it to this
     * client's connection, so that the server deletes it when the connection closes (the client
     * closed it, or its process exited or was killed); otherwise leaves it as it is. ZooKeeper's
     * ephemeral node, which PyTorch's stores lack; ddp4j uses it to tell a rank's live process from
     * one that has gone.
     *
     * @return the value the key now holds: {@code value} itself when the claim holds, the other
     *     claimant's value when it does not; null when this store has no connections to tie a key
     *     to (the default: {@link HashStore}, {@link FileStore}), and nothing was written
     */
    default byte[] claimWhileConnected(String key, byte[] value) {
        return null;
    }

    /** Releases connections or files; the default does nothing. */
    @Override
    default void close() {}
}
