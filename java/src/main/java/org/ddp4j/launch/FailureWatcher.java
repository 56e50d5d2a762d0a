package org.ddp4j.launch;

import java.time.Duration;
import java.util.List;
import org.ddp4j.distributed.store.Store;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Polls an attempt's store on a daemon thread for the {@value #FAILED_KEY} key, the attempt's root
 * cause (see {@link RootCause}), so every node stops its workers when one fails. Whether the store
 * and the other nodes are still there is the {@link KeepAlive}'s business: a call that fails or
 * overruns here is only retried.
 */
final class FailureWatcher implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(FailureWatcher.class);

    /** The key holding the description of the first failure of an attempt. */
    static final String FAILED_KEY = "failed";

    /** How often the store is polled. */
    static final Duration POLL_INTERVAL = Duration.ofMillis(200);

    private final Store store;
    private final String endpoint;
    private final int nodeRank;
    private volatile List<String> hung = List.of();
    private List<String> hungPublished = List.of();
    private final Thread thread;
    private volatile String failure;
    private final Object sleeper = new Object();
    private volatile boolean closed;

    /** Starts polling {@code store} (an attempt's store) at once. */
    FailureWatcher(Store store, String endpoint, int nodeRank) {
        this.store = store;
        this.endpoint = endpoint;
        this.nodeRank = nodeRank;
        this.thread = new Thread(this::loop, "ddp4j-run-node" + nodeRank + "-watcher");
        thread.setDaemon(true);
        thread.start();
    }

    /** The failure another launcher reported, or null. */
    String failure() {
        return failure;
    }

    /**
     * Publishes, from the polling thread, the stopped local workers ({@link RootCause#publishHung}), so
     * that a launcher deciding a root cause elsewhere names them rather than the ranks that waited.
     */
    void reportHung(List<String> descriptions) {
        hung = List.copyOf(descriptions);
        synchronized (sleeper) {
            sleeper.notifyAll();
        }
    }

    private void loop() {
        while (!closed && failure == null) {
            try {
                List<String> now = hung;
                if (!now.equals(hungPublished)) {
                    RootCause.publishHung(store, nodeRank, now);
                    hungPublished = now;
                }
                if (store.check(List.of(FAILED_KEY))) {
                    failure = NodeRendezvous.string(store.get(FAILED_KEY));
                }
            } catch (RuntimeException e) {
                if (closed) {
                    return;
                }
                LOG.debug("store at {} did not answer: {}", endpoint, e.toString());
            }
            synchronized (sleeper) {
                if (closed) {
                    return;
                }
                try {
                    sleeper.wait(POLL_INTERVAL.toMillis());
                } catch (InterruptedException e) {
                    return;
                }
            }
        }
    }

    /**
     * Stops polling and waits for a store call in progress to finish. The thread is woken, never
     * interrupted: interrupting a thread inside channel I/O would close the store's connection.
     */
    @Override
    public void close() {
        synchronized (sleeper) {
            closed = true;
            sleeper.notifyAll();
        }
        try {
            thread.join(2000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
