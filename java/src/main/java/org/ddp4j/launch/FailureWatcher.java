package org.ddp4j.launch;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;
import java.util.function.Supplier;
import org.ddp4j.distributed.store.Store;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Polls an attempt's store on a daemon thread for the {@value #FAILED_KEY} key, the attempt's root
 * cause (see {@link RootCause}), so every node stops its workers when one fails. On the same rounds
 * it relays stall warnings: its own workers' go into the store ({@value #STALL_COUNT_KEY} counts
 * them, {@value #STALL_KEY}N holds the N-th), and the other nodes' are printed here, so that every
 * launcher shows every stall, also a node whose only rank is the one not taking part. Whether the
 * store and the other nodes are still there is the {@link KeepAlive}'s business: a call that fails
 * or overruns here is only retried.
 */
final class FailureWatcher implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(FailureWatcher.class);

    /** The key holding the description of the first failure of an attempt. */
    static final String FAILED_KEY = "failed";

    /** The number of stall warnings relayed in this attempt (a store counter). */
    static final String STALL_COUNT_KEY = "stall/count";

    /** The prefix of the relayed stall warnings: {@code stall/1}, {@code stall/2}, ... */
    static final String STALL_KEY = "stall/";

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
    private final Supplier<List<String>> localStalls;
    private final Consumer<String> show;
    private final List<String> stallsToPublish = new ArrayList<>();
    private long stallsShown;

    /**
     * Starts polling {@code store} (an attempt's store) at once.
     *
     * @param localStalls this node's new stall warnings on each call (see WorkerGroup#takeStallWarnings)
     * @param show prints another node's stall warning, e.g. "node 1: [rank1]: ddp4j: stall: ..."
     */
    FailureWatcher(Store store, String endpoint, int nodeRank, Supplier<List<String>> localStalls, Consumer<String> show) {
        this.store = store;
        this.endpoint = endpoint;
        this.nodeRank = nodeRank;
        this.localStalls = localStalls;
        this.show = show;
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
                relayStalls();
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

    /** Publishes this node's new stall warnings and shows the other nodes' (in the order they were published). */
    private void relayStalls() {
        stallsToPublish.addAll(localStalls.get());
        while (!stallsToPublish.isEmpty()) {
            long n = store.add(STALL_COUNT_KEY, 1);
            store.set(STALL_KEY + n, (nodePrefix() + stallsToPublish.get(0)).getBytes(StandardCharsets.UTF_8));
            stallsToPublish.remove(0);
        }
        long count = store.add(STALL_COUNT_KEY, 0);
        while (stallsShown < count) {
            String key = STALL_KEY + (stallsShown + 1);
            if (!store.check(List.of(key))) {
                return; // counted but not yet written by its node: next round
            }
            String line = NodeRendezvous.string(store.get(key));
            stallsShown++;
            if (!line.startsWith(nodePrefix())) {
                show.accept(line);
            }
        }
    }

    private String nodePrefix() {
        return "node " + nodeRank + ": ";
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
