package org.ddp4j.launch;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.ddp4j.distributed.WorkerError;
import org.ddp4j.distributed.store.Store;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Picks the one failure of an attempt that every launcher names as its root cause, through the
 * attempt's store.
 *
 * <p>When one worker dies, its peers' collectives fail and they exit non-zero too, often within
 * milliseconds; those are consequences. The rules, applied the same way on every node:
 * <ol>
 *   <li>Every failure seen by a launcher is appended to a log in the store ({@code failures/<seq>},
 *       numbered in the order the store received them).
 *   <li>A worker killed by a signal is a cause, never a consequence (a failing collective makes a
 *       worker exit, not die by a signal): its launcher claims the root-cause key at once.
 *   <li>A worker that is stopped (state T: SIGSTOP, Ctrl-Z, a debugger) takes part in nothing while
 *       its launcher's keep-alive goes on; its launcher publishes it under {@code hung/<node>}
 *       while it lasts, and claims it at once when one of its own other workers fails.
 *   <li>A launcher that was itself not running for longer than the others wait for it
 *       ({@link KeepAlive#selfPause()}) claims that at once: what failed meanwhile is its consequence.
 *   <li>A worker that exited non-zero first waits {@link #GRACE}, and longer while another node's
 *       keep-alive is late (that node may be dying), so a signal death or a lost node elsewhere
 *       can be published first. Then the first signal death in the log is claimed, else a stopped
 *       worker published by any node, else the
 *       failure that exited first by its launcher's wall clock (a peer's collective fails only
 *       after the cause died; on hosts whose clocks differ by more than that reaction time, tens of
 *       milliseconds, the order among plain exits can be wrong).
 *   <li>The root-cause key ({@value FailureWatcher#FAILED_KEY}) is set once, by compare-and-set: the
 *       first claim wins and every launcher reports what it holds.
 * </ol>
 */
final class RootCause {

    private static final Logger LOG = LoggerFactory.getLogger(RootCause.class);

    /** How long a launcher whose worker exited non-zero waits for a failure elsewhere to be published. */
    static final Duration GRACE = Duration.ofSeconds(3);

    private static final String COUNT_KEY = "failures/count";
    private static final char SIGNAL = 'S';
    private static final char OTHER = 'X';
    private static final long POLL_MS = 100;

    private RootCause() {}

    /** Whether a worker's exit code is a death by a signal: the JDK reports those as 128 + the signal number. */
    static boolean killedBySignal(int exitCode) {
        return exitCode > 128 && exitCode <= 128 + 64;
    }

    /**
     * Names a worker failure, e.g. {@code rank 1 (node 1, local rank 0) was killed by signal 9} or
     * {@code rank 1 (node 1, local rank 0) exited with code 3}.
     */
    static String describe(int rank, int nodeRank, int localRank, int exitCode) {
        String who = "rank " + rank + " (node " + nodeRank + ", local rank " + localRank + ")";
        if (killedBySignal(exitCode)) {
            int sig = exitCode - 128;
            return who + " was killed by signal " + sig + signalHint(sig);
        }
        return who + " exited with code " + exitCode;
    }

    /**
     * Names a worker by the failure it recorded in its error file, e.g. {@code rank 1 (node 0, local
     * rank 1) failed: IllegalStateException: the checkpoint is corrupt}: a worker whose own failure
     * came before another's exit (the launcher may have stopped it since). The message's first line,
     * at most {@value #MAX_ERROR_CHARS} characters.
     */
    static String describeError(int rank, int nodeRank, int localRank, WorkerError error) {
        return "rank " + rank + " (node " + nodeRank + ", local rank " + localRank + ") failed: " + errorLine(error);
    }

    /** A recorded failure in one line: its class's simple name and its message's first line, bounded. */
    static String errorLine(WorkerError error) {
        String summary = error.summary().lines().findFirst().orElse("");
        return summary.length() > MAX_ERROR_CHARS ? summary.substring(0, MAX_ERROR_CHARS) + "..." : summary;
    }

    private static final int MAX_ERROR_CHARS = 400;

    /**
     * Names a worker whose JVM died of a fatal error (a crash in native code or in the JVM itself,
     * which then aborts: SIGABRT), e.g. {@code rank 1 (node 0, local rank 1) crashed: JVM fatal error,
     * see /tmp/hs_err_pid4242.log}: a cause, as a signal death is.
     */
    static String describeCrash(int rank, int nodeRank, int localRank, java.nio.file.Path crashLog) {
        return "rank " + rank + " (node " + nodeRank + ", local rank " + localRank + ") crashed: JVM fatal error, see "
                + crashLog;
    }

    /**
     * Names a worker that is stopped, e.g. {@code rank 1 (node 1, local rank 0) was stopped (pid 4242 in
     * state T: SIGSTOP, Ctrl-Z or a debugger) and took part in no collective}: its peers' collectives
     * then time out, and their failures are its consequences.
     */
    static String describeHung(int rank, int nodeRank, int localRank, long pid, char state) {
        return "rank " + rank + " (node " + nodeRank + ", local rank " + localRank + ") was stopped (pid " + pid
                + " in state " + state + (state == 't' ? ": stopped by a debugger" : ": SIGSTOP, Ctrl-Z or a debugger")
                + ") and took part in no collective";
    }

    /**
     * A collective timeout a failed worker reported: the op in words, how long it waited (e.g.
     * {@code 8 s}), the peer rank it waited for (-1: several or unknown) and whether TCP saw packet loss.
     */
    record Timeout(String op, String after, int peerRank, boolean packetLoss) {

        /** From a worker's error file; null when its failure was not a timeout. */
        static Timeout of(WorkerError e) {
            if (!e.timeout()) {
                return null;
            }
            return new Timeout(e.op() == null ? "a collective" : e.op(),
                    e.timeoutMillis() < 0 ? null : duration(e.timeoutMillis()), e.peerRank(), e.packetLoss());
        }

        /** As the native messages write a duration: {@code 8 s}, {@code 1.5 s}, {@code 2 min}, {@code 400 ms}. */
        static String duration(long ms) {
            if (ms >= 60_000 && ms % 60_000 == 0) {
                return ms / 60_000 + " min";
            }
            if (ms >= 1000) {
                return ms % 1000 == 0 ? ms / 1000 + " s" : ms / 1000.0 + " s";
            }
            return ms + " ms";
        }
    }

    /**
     * The collective timeout a failed worker that wrote no error file reported on stderr, from its
     * last lines: the message of a {@code DistributedTimeoutException} (else a line saying
     * {@code timed out after}), read back into its parts; null when there is none.
     */
    static Timeout collectiveTimeout(List<String> errTail) {
        String fallback = null;
        for (int i = errTail.size() - 1; i >= 0; i--) {
            String line = errTail.get(i);
            int at = line.indexOf(TIMEOUT_EXCEPTION);
            if (at >= 0) {
                return timeoutIn(withoutGloo(line.substring(at + TIMEOUT_EXCEPTION.length()).strip()));
            }
            if (fallback == null && line.contains(" timed out after ")) {
                fallback = withoutGloo(line.strip());
            }
        }
        return fallback == null ? null : timeoutIn(fallback);
    }

    /** A timeout message's parts: "OP timed out after D on rank R ..." with its peer rank and loss evidence. */
    private static Timeout timeoutIn(String timeout) {
        int timedOut = timeout.indexOf(" timed out after ");
        String op = timedOut > 0 ? timeout.substring(0, timedOut) : "a collective";
        String after = null;
        if (timedOut > 0) {
            int from = timedOut + " timed out after ".length();
            int onRank = timeout.indexOf(" on rank ", from);
            after = onRank > from ? timeout.substring(from, onRank) : timeout.substring(from);
        }
        return new Timeout(op, after, peerRankIn(timeout), timeout.contains("is losing packets"));
    }

    private static final String TIMEOUT_EXCEPTION = "DistributedTimeoutException: ";

    /**
     * The peer rank a failed worker's last distributed error names ({@code peer rank 1 may have died},
     * {@code waiting for peer rank 0}, ...), from its last stderr lines; -1 when there is none.
     */
    static int peerNamedIn(List<String> errTail) {
        for (int i = errTail.size() - 1; i >= 0; i--) {
            String line = errTail.get(i);
            int at = line.indexOf("Exception: ");
            if (at >= 0 && line.contains("org.ddp4j.distributed.Distributed")) {
                return peerRankIn(line.substring(at));
            }
            // the demos print a failure as one line without its exception's class: "ConvNetDemo: error: <message>"
            at = line.indexOf(": error: ");
            if (at >= 0 && line.contains(" failed on rank ")) {
                return peerRankIn(line.substring(at));
            }
        }
        return -1;
    }

    /**
     * Whether a failed worker's last stderr lines show a distributed error (a ddp4j
     * {@code Distributed...Exception}, or a demo's one-line {@code ...: error: ... failed on rank N}):
     * it failed because of a peer. A worker that failed with nothing of the kind (its own bad
     * file, an exception of its own, a kill) failed on its own, not as another's consequence.
     */
    static boolean failedOnAPeer(List<String> errTail) {
        for (String line : errTail) {
            if ((line.contains("org.ddp4j.distributed.Distributed") && line.contains("Exception"))
                    || (line.contains(": error: ") && line.contains(" failed on rank "))) {
                return true;
            }
        }
        return false;
    }

    private static String withoutGloo(String message) {
        int gloo = message.indexOf(" [gloo: ");
        return gloo > 0 ? message.substring(0, gloo) : message;
    }

    private static final Pattern PEER_RANK = Pattern.compile("(?:peer rank|waiting for rank) (\\d+)");

    /** The peer rank a timeout message names ({@code peer rank 1}, {@code waiting for rank 1}), or -1. */
    static int peerRankIn(String message) {
        Matcher m = PEER_RANK.matcher(message);
        return m.find() ? Integer.parseInt(m.group(1)) : -1;
    }

    /**
     * The root cause of a collective timeout on {@code waiter}'s host while the peer's launcher was
     * alive and no worker was stopped: the data did not get through between the two hosts. E.g.
     * {@code the network between node 1 (10.77.0.2) and node 0 (10.77.0.1): rank 1 (node 1, local rank 0)
     * timed out after 8 s waiting for peer rank 0's data in allReduce(SUM) of 1 float32 element (#615),
     * while the launcher of node 0 (10.77.0.1) was alive (its keep-alive arrived 0.6 s ago) and no
     * worker was stopped: the data did not get through - a network problem between the two hosts ...}.
     *
     * @param waiter the failed worker's description ({@link #describe})
     * @param here this node's name, {@code node N (ADDRESS)}
     * @param there the peer node's name, or null when the peer is not known (then "the other nodes")
     * @param alive what shows the peer alive, e.g. {@code the launcher of node 1 (10.77.0.2) was alive (...)}
     * @param timeout the worker's timeout, from its error file or its stderr ({@link #collectiveTimeout})
     */
    static String describeUnreachable(String waiter, String here, String there, String alive, Timeout timeout) {
        boolean lossSeen = timeout.packetLoss();
        int peer = timeout.peerRank();
        int exited = waiter.indexOf(" exited with code");
        String who = exited > 0 ? waiter.substring(0, exited) : waiter;
        String after = timeout.after() == null ? "" : " after " + timeout.after();
        String between = there == null ? here + " and the other nodes" : here + " and " + there;
        return "the network between " + between + ": " + who + " timed out" + after + " waiting for "
                + (peer >= 0 ? "peer rank " + peer + "'s" : "its peers'") + " data in " + timeout.op() + ", while " + alive
                + " and no worker was stopped: the data did not get through - a network problem between the "
                + (there == null ? "hosts" : "two hosts") + " (packet loss, a firewall, the MTU"
                + (lossSeen ? "; TCP is retransmitting" : "") + "), not a rank that did not take part"
                + (lossSeen ? "" : " (unless one was busy outside collectives for longer than the timeout)");
    }

    /** The key under which node {@code nodeRank} publishes its stopped workers (empty: none). */
    static String hungKey(int nodeRank) {
        return "hung/" + nodeRank;
    }

    /** Publishes the stopped workers of node {@code nodeRank} ({@code descriptions} empty: none any more). */
    static void publishHung(Store store, int nodeRank, List<String> descriptions) {
        store.set(hungKey(nodeRank), bytes(String.join("; ", descriptions)));
    }

    /** The first stopped worker published by any of {@code nnodes} nodes, or null. */
    static String hungElsewhere(Store store, int nnodes) {
        for (int node = 0; node < nnodes; node++) {
            String key = hungKey(node);
            if (store.check(List.of(key))) {
                String hung = string(store.get(key));
                if (!hung.isEmpty()) {
                    return hung;
                }
            }
        }
        return null;
    }

    private static String signalHint(int sig) {
        return switch (sig) {
            case 6 -> " (SIGABRT)";
            case 9 -> " (SIGKILL: kill -9, or the kernel's out-of-memory killer)";
            case 11 -> " (SIGSEGV)";
            case 15 -> " (SIGTERM)";
            default -> "";
        };
    }

    /**
     * Records a local worker failure and returns the attempt's root cause, as agreed through
     * {@code store}: the description of this failure or of one elsewhere. Never throws; when the store
     * cannot be reached the local description is returned.
     *
     * @param lost the keep-alive's verdict, checked while waiting: a lost node becomes the root cause
     * @param late whether some node's keep-alive is late (then the wait goes on, up to {@code maxWait})
     * @param maxWait the longest wait in all (the keep-alive timeout plus {@link #GRACE} is enough)
     */
    static String decide(Store store, int exitCode, long exitMillis, String description, Supplier<String> lost,
            BooleanSupplier late, Duration maxWait) throws InterruptedException {
        return decide(store, exitCode, exitMillis, description, 0, lost, () -> null, late, maxWait);
    }

    /**
     * As {@link #decide(Store, int, long, String, Supplier, BooleanSupplier, Duration)}, also naming a
     * worker that one of the {@code nnodes} nodes published as stopped ({@link #publishHung}) before a
     * plain exit, and claiming {@code selfPause}'s verdict at once when it has one (this launcher was
     * not running for longer than the others wait: see {@link KeepAlive#selfPause()}).
     */
    static String decide(Store store, int exitCode, long exitMillis, String description, int nnodes,
            Supplier<String> lost, Supplier<String> selfPause, BooleanSupplier late, Duration maxWait)
            throws InterruptedException {
        return decide(store, exitCode, exitMillis, description, nnodes, false, lost, selfPause, late, maxWait);
    }

    /**
     * As above; with {@code peerFirst} (the worker's error named a peer on another node: it died,
     * closed its group, or sent nothing) the wait goes on past the grace, up to {@code maxWait},
     * until another failure is in the log (or a stopped worker published): that node's report may be slow to come over a poor
     * network, and it, not this consequence, may be the cause.
     */
    static String decide(Store store, int exitCode, long exitMillis, String description, int nnodes,
            boolean peerFirst, Supplier<String> lost, Supplier<String> selfPause, BooleanSupplier late,
            Duration maxWait) throws InterruptedException {
        boolean signal = killedBySignal(exitCode);
        long start = System.nanoTime();
        try {
            long seq = store.add(COUNT_KEY, 1);
            store.set("failures/" + seq, bytes((signal ? SIGNAL : OTHER) + Long.toString(exitMillis) + "|" + description));
            if (signal) {
                return claim(store, description);
            }
            while (true) {
                if (store.check(List.of(FailureWatcher.FAILED_KEY))) {
                    return string(store.get(FailureWatcher.FAILED_KEY));
                }
                String paused = selfPause.get();
                if (paused != null) {
                    return claim(store, paused);
                }
                String gone = lost.get();
                if (gone != null) {
                    return claim(store, gone);
                }
                long waited = System.nanoTime() - start;
                if (waited >= maxWait.toNanos() || (waited >= GRACE.toNanos() && !late.getAsBoolean()
                        && (!peerFirst || store.add(COUNT_KEY, 0) > 1 || hungElsewhere(store, nnodes) != null))) {
                    break;
                }
                Thread.sleep(POLL_MS);
            }
            return claim(store, firstInLog(store, nnodes, description));
        } catch (RuntimeException e) {
            // The store itself may be going away with node 0: let the keep-alive decide.
            LOG.warn("could not agree on the root cause with the other nodes: {}", e.toString());
            while (true) {
                String paused = selfPause.get();
                if (paused != null) {
                    return paused;
                }
                String gone = lost.get();
                if (gone != null) {
                    return gone;
                }
                long waited = System.nanoTime() - start;
                if (waited >= maxWait.toNanos() || (waited >= GRACE.toNanos() && !late.getAsBoolean())) {
                    return description;
                }
                Thread.sleep(POLL_MS);
            }
        }
    }

    /** Claims {@code description} as the root cause unless one was claimed already; returns the winner. */
    static String claim(Store store, String description) {
        byte[] won = store.compareSet(FailureWatcher.FAILED_KEY, new byte[0], bytes(description));
        return string(won);
    }

    /**
     * The first signal death in the failure log, else a stopped worker of one of {@code nnodes} nodes,
     * else the entry that exited first (then the first logged).
     */
    private static String firstInLog(Store store, int nnodes, String fallback) {
        long count = store.add(COUNT_KEY, 0);
        String signal = firstSignalInLog(store, count);
        if (signal != null) {
            return signal;
        }
        String hung = hungElsewhere(store, nnodes);
        if (hung != null) {
            return hung;
        }
        String first = null;
        long firstMillis = Long.MAX_VALUE;
        for (long i = 1; i <= count; i++) {
            String key = "failures/" + i;
            if (!store.check(List.of(key))) {
                continue; // its launcher is between add and set
            }
            String entry = string(store.get(key));
            int bar = entry.indexOf('|');
            if (entry.isEmpty() || bar < 0) {
                continue;
            }
            String description = entry.substring(bar + 1);
            if (entry.charAt(0) == SIGNAL) {
                return description;
            }
            long millis;
            try {
                millis = Long.parseLong(entry.substring(1, bar));
            } catch (NumberFormatException e) {
                millis = Long.MAX_VALUE - 1;
            }
            if (millis < firstMillis) {
                firstMillis = millis;
                first = description;
            }
        }
        return first != null ? first : fallback;
    }

    private static String firstSignalInLog(Store store, long count) {
        for (long i = 1; i <= count; i++) {
            String key = "failures/" + i;
            if (store.check(List.of(key))) {
                String entry = string(store.get(key));
                int bar = entry.indexOf('|');
                if (!entry.isEmpty() && bar >= 0 && entry.charAt(0) == SIGNAL) {
                    return entry.substring(bar + 1);
                }
            }
        }
        return null;
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    private static String string(byte[] b) {
        return new String(b, StandardCharsets.UTF_8);
    }
}
