package org.ddp4j.distributed.store;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import org.ddp4j.distributed.DistributedTimeoutException;

/**
 * A view of another {@link Store} in which every key is prefixed with {@code prefix + "/"}, so that
 * several users (process groups, rendezvous rounds) can share one store without their keys
 * colliding. Mirrors PyTorch's {@code torch.distributed.PrefixStore}.
 *
 * <p>Timeouts are the inner store's; error messages name the full (prefixed) keys.
 */
public final class PrefixStore implements Store {
    private final String prefix;
    private final Store inner;

    /**
     * A view of {@code inner} under {@code prefix}.
     *
     * @param prefix the namespace; keys become {@code prefix + "/" + key}
     * @param inner the store that holds the keys; it is not closed by {@link #close()}
     */
    public PrefixStore(String prefix, Store inner) {
        this.prefix = Objects.requireNonNull(prefix, "prefix");
        this.inner = Objects.requireNonNull(inner, "inner");
    }

    /** The prefix, without the trailing {@code "/"}. */
    public String prefix() {
        return prefix;
    }

    /** The store underneath. Mirrors {@code PrefixStore.underlying_store}. */
    public Store underlying() {
        return inner;
    }

    private String k(String key) {
        return prefix + "/" + StoreSupport.checkKey(key);
    }

    private List<String> k(List<String> keys) {
        List<String> out = new ArrayList<>(keys.size());
        for (String key : StoreSupport.checkKeys(keys)) {
            out.add(k(key));
        }
        return out;
    }

    @Override
    public void set(String key, byte[] value) {
        inner.set(k(key), value);
    }

    /**
     * {@inheritDoc}
     *
     * @throws DistributedTimeoutException naming the prefixed key, after the inner store's timeout
     */
    @Override
    public byte[] get(String key) {
        return inner.get(k(key));
    }

    @Override
    public long add(String key, long delta) {
        return inner.add(k(key), delta);
    }

    @Override
    public byte[] compareSet(String key, byte[] expected, byte[] desired) {
        return inner.compareSet(k(key), expected, desired);
    }

    /**
     * {@inheritDoc}
     *
     * @throws DistributedTimeoutException naming the missing prefixed keys
     */
    @Override
    public void waitFor(List<String> keys, Duration timeout) {
        inner.waitFor(k(keys), timeout);
    }

    @Override
    public boolean check(List<String> keys) {
        return inner.check(k(keys));
    }

    @Override
    public boolean deleteKey(String key) {
        return inner.deleteKey(k(key));
    }

    @Override
    public byte[] claimWhileConnected(String key, byte[] value) {
        return inner.claimWhileConnected(k(key), value);
    }

    /** The inner store's timeout. */
    @Override
    public Duration timeout() {
        return inner.timeout();
    }

    /** Does nothing: the inner store may be shared by other views; close it where it was created. */
    @Override
    public void close() {}

    @Override
    public String toString() {
        return "PrefixStore(\"" + prefix + "\", " + inner + ")";
    }
}
