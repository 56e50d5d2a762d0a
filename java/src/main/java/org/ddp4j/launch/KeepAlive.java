package org.ddp4j.launch;

import java.net.DatagramSocket;
import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Locale;
import java.util.function.Supplier;
import org.ddp4j.distributed.store.Store;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.ddp4j.internal.Setting;

/**
 * The launchers' keep-alive through the job's store, as torchrun's rendezvous keep-alive: every
 * {@code interval} each launcher bumps its counter {@code ddp4j/keepalive/beat/<node>} and reads the
 * other nodes' counters, on a store connection of its own so that a call blocked elsewhere in the
 * launcher never delays it. A node whose counter did not move for {@code timeout}, as seen through a
 * store that kept answering, is lost; a store that answered nothing for {@code timeout} means node 0
 * (which serves it) is lost, or this node is cut off from it.
 *
 * <p>Node 0 watches every node; the others watch node 0 (its counter, and its store answering),
 * so the store serves O(nodes) calls per interval, not O(nodes²). A node lost by node 0 reaches the
 * others as the attempt's root cause, which node 0 publishes.
 *
 * <p>Time during which this launcher itself did not run (SIGSTOP, a long GC pause, a starved CPU)
 * is not counted against the others: a judge thread notices such gaps and moves every deadline on.
 * A gap long enough for the others to have given this node up ({@link #selfPause()}) is this
 * launcher's own fault: it becomes the root cause here, and the loss of a node that follows is
 * reported as its consequence, so a paused launcher never blames the nodes it left behind.
 * A node that finished its part of the job marks itself left (its counter jumps by
 * {@link #LEFT_MARK}) and is no longer watched.
 *
 * <p>Each launcher publishes its address under {@code ddp4j/keepalive/address/<node>}: the local
 * address it reaches the store from (node 0: the master address), which names it in messages.
 */
final class KeepAlive implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(KeepAlive.class);

    /** Environment variable with the default of {@code --keepalive-interval}, in seconds. */
    static final String INTERVAL_ENV = Setting.KEEPALIVE_INTERVAL.variable();

    /** Environment variable with the default of {@code --keepalive-timeout}, in seconds. */
    static final String TIMEOUT_ENV = Setting.KEEPALIVE_TIMEOUT.variable();

    /** Added to a node's counter when it leaves: any counter at or above it belongs to a node that is done. */
    static final long LEFT_MARK = 1L << 40;

    private static final String PREFIX = "ddp4j/keepalive/";

    /** How often the judge looks; a much longer gap between two looks means this process was not running. */
    private static final long TICK_MS = 100;

    /**
     * A gap between two looks beyond this counts as this process having been paused, and only the
     * excess is forgiven: a judge that is merely starved (every look late by a second or two) still
     * reaches its verdict, a little later.
     */
    private static final long PAUSE_NANOS = 2_000_000_000L;

    private final int nodeRank;
    private final int nnodes;
    private final String masterAddr;
    private final String endpoint;
    private final Duration interval;
    private final Duration timeout;
    private final Supplier<Store> connector;
    private final String myAddress;

    private final Object lock = new Object();
    private final long[] beat;
    private final long[] heardAt;
    private final boolean[] left;
    private final String[] address;
    private long lastContact;
    private boolean watching;
    private int lostNode = -1;
    private long pauseNanos;
    private long pauseEndedAt;
    private volatile String lost;
    private volatile boolean leaving;
    private volatile boolean closed;
    private volatile Store connection;
    private final Thread beater;
    private final Thread judge;

    /**
     * Starts beating at once; other nodes are watched from {@link #watchAll()} on.
     *
     * @param connector opens a new connection to the job's store (called again after a failed call)
     * @param endpoint the store's {@code host:port}, for messages
     */
    KeepAlive(int nodeRank, int nnodes, String masterAddr, String endpoint, Duration interval, Duration timeout,
            Supplier<Store> connector) {
        this.nodeRank = nodeRank;
        this.nnodes = nnodes;
        this.masterAddr = masterAddr;
        this.endpoint = endpoint;
        this.interval = interval;
        this.timeout = timeout;
        this.connector = connector;
        this.beat = new long[nnodes];
        this.heardAt = new long[nnodes];
        this.left = new boolean[nnodes];
        this.address = new String[nnodes];
        this.address[0] = masterAddr;
        this.myAddress = nodeRank == 0 ? masterAddr : localAddressTowards(masterAddr, endpoint);
        this.address[nodeRank] = myAddress;
        this.lastContact = System.nanoTime();
        this.beater = new Thread(this::beatLoop, "ddp4j-run-node" + nodeRank + "-keepalive");
        this.judge = new Thread(this::judgeLoop, "ddp4j-run-node" + nodeRank + "-keepalive-judge");
        beater.setDaemon(true);
        judge.setDaemon(true);
        beater.start();
        judge.start();
    }

    static String beatKey(int node) {
        return PREFIX + "beat/" + node;
    }

    static String addressKey(int node) {
        return PREFIX + "address/" + node;
    }

    /** Starts watching every other node (after the rendezvous, when all of them are known to be up). */
    void watchAll() {
        synchronized (lock) {
            long now = System.nanoTime();
            for (int n = 0; n < nnodes; n++) {
                heardAt[n] = now;
            }
            watching = true;
        }
    }

    /** Why a node counts as lost, e.g. {@code lost node 1 (10.77.0.2): no keep-alive for 20 s}; null while none is. */
    String lost() {
        return lost;
    }

    /**
     * Why this launcher itself is to blame, or null: it was not running (SIGSTOP, a long GC pause, a
     * starved or swapping machine) for so long that the other nodes could have declared it lost
     * (the pause plus two intervals reaches the keep-alive timeout), and that was recent (within
     * two timeouts and 30 s). E.g. {@code the launcher of node 0 (10.77.0.1) was not running for
     * 25.1 s (...), longer than the keep-alive timeout of 20 s: the other nodes could give it up as lost}.
     */
    String selfPause() {
        synchronized (lock) {
            return selfPauseLocked(System.nanoTime());
        }
    }

    private String selfPauseLocked(long now) {
        if (pauseNanos == 0 || pauseNanos + 2 * interval.toNanos() < timeout.toNanos()
                || now - pauseEndedAt > 2 * timeout.toNanos() + 30_000_000_000L) {
            return null;
        }
        return "the launcher of " + nameLocked(nodeRank) + " was not running for "
                + seconds(Duration.ofMillis(pauseNanos / 100_000_000 * 100))
                + " s (stopped with SIGSTOP or Ctrl-Z, or starved of CPU or memory), longer than the keep-alive timeout of "
                + seconds(timeout) + " s: the other nodes could give it up as lost";
    }

    /** Whether the lost node is node 0 as seen from another node: the store is gone, so no more store calls. */
    boolean storeLost() {
        synchronized (lock) {
            return lost != null && lostNode == 0 && nodeRank != 0;
        }
    }

    /** Whether {@code node} marked itself done (it sets its exit key first, or could not). */
    boolean hasLeft(int node) {
        synchronized (lock) {
            return left[node];
        }
    }

    /** Whether {@code node} was declared lost. */
    boolean isLost(int node) {
        synchronized (lock) {
            return lostNode == node;
        }
    }

    /**
     * Whether some watched node (or the store) has been silent for more than two intervals: a failure
     * seen locally may then be the consequence of that node's death, not yet declared.
     */
    boolean anyLate() {
        synchronized (lock) {
            long now = System.nanoTime();
            long late = 2 * interval.toNanos();
            if (now - lastContact > late) {
                return true;
            }
            if (!watching) {
                return false;
            }
            for (int n = 0; n < nnodes; n++) {
                if (watches(n) && !left[n] && lastContact - heardAt[n] > late) {
                    return true;
                }
            }
            return false;
        }
    }

    /**
     * How long ago, in ms, node {@code node}'s keep-alive counter last moved, as seen here; -1 when this
     * node does not watch it (the others watch only node 0) or watching has not begun.
     */
    long heardAgoMillis(int node) {
        synchronized (lock) {
            if (!watching || !watches(node)) {
                return -1;
            }
            return Math.max(0, (System.nanoTime() - heardAt[node]) / 1_000_000);
        }
    }

    /** How long ago, in ms, the store last answered this node's keep-alive. */
    long storeAnsweredAgoMillis() {
        synchronized (lock) {
            return Math.max(0, (System.nanoTime() - lastContact) / 1_000_000);
        }
    }

    /** The keep-alive timeout. */
    Duration timeout() {
        return timeout;
    }

    /** The name of a node in messages: {@code node N (ADDRESS)}. */
    String name(int node) {
        synchronized (lock) {
            return "node " + node + " (" + (address[node] == null ? "address unknown" : address[node]) + ")";
        }
    }

    /**
     * Tells the others this node is done, so its silence from now on is not a loss, then stops. Waits
     * at most one keep-alive timeout for the store.
     */
    void leave() {
        leaving = true;
        synchronized (lock) {
            lock.notifyAll();
        }
        try {
            beater.join(Math.max(1, Math.min(timeout.toMillis(), 5_000)));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private void beatLoop() {
        boolean published = false;
        long bumps = 0;
        while (!closed) {
            long start = System.nanoTime();
            Store s = connection;
            try {
                if (s == null) {
                    s = connector.get();
                    connection = s;
                    if (closed) {
                        closeQuietly(s);
                        break;
                    }
                }
                if (!published) {
                    s.set(addressKey(nodeRank), myAddress.getBytes(StandardCharsets.UTF_8));
                    published = true;
                }
                if (leaving) {
                    s.add(beatKey(nodeRank), LEFT_MARK);
                    return;
                }
                s.add(beatKey(nodeRank), 1);
                bumps++;
                for (int n = 0; n < nnodes; n++) {
                    if (watches(n)) {
                        read(s, n);
                    }
                }
                synchronized (lock) {
                    lastContact = Math.max(lastContact, System.nanoTime());
                }
            } catch (RuntimeException e) {
                if (closed) {
                    break;
                }
                LOG.debug("node {}: keep-alive round {} failed: {}", nodeRank, bumps, e.toString());
                connection = null;
                closeQuietly(s);
            }
            long sleepMs = interval.toMillis() - (System.nanoTime() - start) / 1_000_000;
            synchronized (lock) {
                if (closed || leaving) {
                    continue;
                }
                try {
                    lock.wait(Math.max(1, sleepMs));
                } catch (InterruptedException e) {
                    return;
                }
            }
        }
    }

    /** Whether this node watches node {@code n}: node 0 watches all others, the others node 0. */
    private boolean watches(int n) {
        return n != nodeRank && (nodeRank == 0 || n == 0);
    }

    /** Reads node {@code n}'s counter (and its address, once): a change means it is alive. */
    private void read(Store s, int n) {
        long value = s.add(beatKey(n), 0);
        String addr = null;
        if (value > 0 && address[n] == null && s.check(java.util.List.of(addressKey(n)))) {
            addr = new String(s.get(addressKey(n)), StandardCharsets.UTF_8);
        }
        long now = System.nanoTime();
        synchronized (lock) {
            if (addr != null) {
                address[n] = addr;
            }
            if (value >= LEFT_MARK && !left[n]) {
                left[n] = true;
                LOG.debug("node {}: node {} left the job", nodeRank, n);
            }
            if (value != beat[n]) {
                beat[n] = value;
                heardAt[n] = now;
            }
        }
    }

    private void judgeLoop() {
        long lastTick = System.nanoTime();
        while (!closed && lost == null) {
            try {
                Thread.sleep(TICK_MS);
            } catch (InterruptedException e) {
                return;
            }
            long now = System.nanoTime();
            long gap = now - lastTick;
            lastTick = now;
            synchronized (lock) {
                if (gap > PAUSE_NANOS) {
                    // This launcher did not run for a while: nobody could be heard then; start the clocks anew.
                    long shift = gap - PAUSE_NANOS;
                    LOG.debug("node {}: this launcher was paused for {} ms; keep-alive deadlines move on",
                            nodeRank, gap / 1_000_000);
                    pauseNanos = gap;
                    pauseEndedAt = now;
                    lastContact += shift;
                    for (int n = 0; n < nnodes; n++) {
                        heardAt[n] += shift;
                    }
                }
                judge(now);
            }
        }
    }

    /** Declares a node lost if its deadline passed. Holds {@link #lock}. */
    private void judge(long now) {
        if (lost != null || leaving) {
            return;
        }
        long limit = timeout.toNanos();
        if (now - lastContact > limit) {
            lostNode = 0;
            lost = nodeRank == 0
                    ? "the store at " + endpoint + " that this node serves did not answer for " + seconds(timeout) + " s"
                    : "lost " + nameLocked(0) + ": the store at " + endpoint + " did not answer for "
                            + seconds(timeout) + " s";
            return;
        }
        if (!watching) {
            return;
        }
        for (int n = 0; n < nnodes; n++) {
            if (watches(n) && !left[n] && lastContact - heardAt[n] > limit) {
                lostNode = n;
                lost = "lost " + nameLocked(n) + ": no keep-alive for " + seconds(timeout) + " s";
                String paused = selfPauseLocked(now);
                if (paused != null) {
                    // It gave this node up while this launcher stood still, and left: our fault, not its.
                    lost = paused + "; " + lost + " after that";
                }
                return;
            }
        }
    }

    private String nameLocked(int node) {
        return "node " + node + " (" + (address[node] == null ? "address unknown" : address[node]) + ")";
    }

    /** Stops beating and watching and closes the keep-alive connection. */
    @Override
    public void close() {
        closed = true;
        synchronized (lock) {
            lock.notifyAll();
        }
        judge.interrupt();
        closeQuietly(connection);
    }

    private static void closeQuietly(Store s) {
        if (s == null) {
            return;
        }
        try {
            s.close();
        } catch (Exception e) {
            LOG.debug("closing the keep-alive connection: {}", e.toString());
        }
    }

    /**
     * The address of this machine that traffic to {@code host} leaves from: what the other nodes see
     * this launcher as. Connecting a UDP socket sends nothing; it only asks the routing table.
     */
    static String localAddressTowards(String host, String endpoint) {
        int port;
        try {
            port = Integer.parseInt(endpoint.substring(endpoint.lastIndexOf(':') + 1));
        } catch (RuntimeException e) {
            port = 9;
        }
        try (DatagramSocket s = new DatagramSocket()) {
            s.connect(InetAddress.getByName(host), port);
            InetAddress local = s.getLocalAddress();
            if (local != null && !local.isAnyLocalAddress()) {
                return local.getHostAddress();
            }
        } catch (Exception e) {
            LOG.debug("cannot tell the local address towards {}: {}", host, e.toString());
        }
        try {
            return InetAddress.getLocalHost().getHostAddress();
        } catch (Exception e) {
            return "address unknown";
        }
    }

    /** Seconds for messages: {@code 20}, or {@code 2.5} when not whole. */
    static String seconds(Duration d) {
        long ms = d.toMillis();
        if (ms % 1000 == 0) {
            return Long.toString(ms / 1000);
        }
        return String.format(Locale.ROOT, "%.1f", ms / 1000.0);
    }
}
