package org.ddp4j.launch;

import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import org.ddp4j.debug.FlightRecorderDump;
import org.ddp4j.debug.FlightRecorderReport;
import org.ddp4j.distributed.DistributedException;
import org.ddp4j.distributed.ErrorFile;
import org.ddp4j.distributed.WorkerError;
import org.ddp4j.distributed.store.PrefixStore;
import org.ddp4j.distributed.store.Store;
import org.ddp4j.distributed.store.TcpStore;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.ddp4j.internal.Setting;

/**
 * The launcher's agent for one node, torchrun's local elastic agent in small: hosts (node 0) or
 * joins the TCP store, then for each attempt does the rendezvous, starts the local workers, watches
 * them and the other nodes, and restarts the group after a failure while restarts remain.
 */
final class Agent {

    private static final Logger LOG = LoggerFactory.getLogger(Agent.class);

    /** This launcher's folder for its workers' error files ({@link ErrorFile}); null until run() makes it. */
    private RunFolder runFolder;

    /** Prefix of each attempt's keys, followed by the attempt number. */
    static final String ATTEMPT_PREFIX = "ddp4j/attempt/";

    /** How long node 0 keeps serving the store after a final failure, for the others to see it. */
    static final Duration FAILURE_LINGER = Duration.ofSeconds(10);

    /** How long the shutdown hook tries to tell the other nodes before stopping the workers. */
    private static final Duration HOOK_NOTIFY = Duration.ofSeconds(1);

    private LaunchConfig cfg; // its port is set once the store is bound, when the launcher picked it
    private final String me;
    private volatile boolean shuttingDown;
    private volatile WorkerGroup current;
    private volatile Store currentStore;
    private KeepAlive keepAlive;

    /** An agent for the node and job described by {@code cfg}; {@link #run()} does the work. */
    Agent(LaunchConfig cfg) {
        this.cfg = cfg;
        this.me = "node " + cfg.nodeRank();
    }

    /**
     * Runs the job on this node.
     *
     * @return the launcher's exit code: 0 when every worker of the last attempt exited 0
     */
    int run() {
        if (cfg.nnodes() > 1 && isLoopback(cfg.masterAddr())) {
            Notices.info(cfg.err(), "--master-addr " + cfg.masterAddr()
                    + " is a loopback address: launchers on other machines cannot reach it");
        }
        List<String> argv;
        try {
            argv = WorkerCommand.argv(cfg.command(), cfg.env(), cfg.nprocPerNode());
        } catch (WorkerCommand.UnknownWorkerException e) {
            error(e.getMessage());
            return 2;
        }
        LOG.debug("{}: worker command line {}", me, argv);
        Store root;
        try {
            TcpStore tcp = new TcpStore(cfg.masterAddr(), cfg.masterPort(), cfg.nodeRank() == 0, cfg.rdzvTimeout());
            if (cfg.masterPort() == 0) {
                cfg = cfg.withMasterPort(tcp.port());
                Notices.info(cfg.err(), "the store listens on " + cfg.endpoint() + " (a free port: --master-port 0 or"
                        + " none; the workers get it as MASTER_PORT)");
            }
            root = new DeadlineStore(tcp, cfg.keepAliveTimeout(), cfg.endpoint());
        } catch (RuntimeException e) {
            String what = cfg.nodeRank() == 0
                    ? "cannot serve the store on " + cfg.endpoint()
                    : "cannot reach the store of node 0 at " + cfg.endpoint(); // the cause says why: a timeout names its bound
            error(what + ": " + e.getMessage());
            return 1;
        }
        if (cfg.nnodes() > 1) {
            keepAlive = new KeepAlive(cfg.nodeRank(), cfg.nnodes(), cfg.masterAddr(), cfg.endpoint(),
                    cfg.keepAliveInterval(), cfg.keepAliveTimeout(),
                    () -> TcpStore.client(cfg.masterAddr(), cfg.masterPort(), cfg.keepAliveTimeout()));
        }
        Thread hook = new Thread(this::onShutdown, "ddp4j-run-shutdown-node" + cfg.nodeRank());
        Runtime.getRuntime().addShutdownHook(hook);
        try {
            runFolder = RunFolder.create();
            return attempts(root, argv);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            WorkerGroup g = current;
            if (g != null) {
                g.stop();
            }
            error("interrupted; stopped the workers");
            return 1;
        } finally {
            try {
                Runtime.getRuntime().removeShutdownHook(hook);
            } catch (IllegalStateException e) {
                // the JVM is already shutting down
            }
            if (keepAlive != null) {
                if (!keepAlive.storeLost()) {
                    keepAlive.leave();
                }
                keepAlive.close();
            }
            try {
                root.close();
            } catch (Exception e) {
                LOG.debug("closing the store: {}", e.toString());
            }
            if (runFolder != null) {
                runFolder.delete();
            }
        }
    }

    private int attempts(Store root, List<String> argv) throws InterruptedException {
        for (int attempt = 0; ; attempt++) {
            long attemptStart = System.currentTimeMillis() - 1000; // slack for file systems with coarse times
            Store store = new PrefixStore(ATTEMPT_PREFIX + attempt, root);
            currentStore = store;
            NodeRendezvous.NodeRanks r;
            try {
                r = NodeRendezvous.join(store, cfg.nodeRank(), cfg.nnodes(), cfg.nprocPerNode(), cfg.rdzvTimeout(),
                        cfg.endpoint(), () -> keepAlive == null ? null : keepAlive.lost());
            } catch (DistributedException e) {
                error(e.getMessage());
                return 1;
            }
            if (cfg.nodeRank() == 0) {
                NodeRendezvous.publish(root, attempt, r); // for processes that join without a launcher
            }
            if (keepAlive != null) {
                keepAlive.watchAll();
            }
            if (cfg.nnodes() > 1) {
                Notices.info(cfg.err(), me + ": rendezvous complete (attempt " + attempt + "): world size " + r.worldSize()
                        + ", this node has ranks " + r.rankOffset() + ".." + (r.rankOffset() + cfg.nprocPerNode() - 1));
            }
            if (shuttingDown) {
                return 1;
            }
            final int att = attempt;
            WorkerGroup group;
            try {
                group = WorkerGroup.start(argv, cfg.nprocPerNode(), r.rankOffset(), cfg.nodeRank(),
                        local -> workerEnv(local, r, att), cfg.out(), cfg.err());
            } catch (WorkerGroup.StartException e) {
                String desc = "cannot start worker rank " + e.rank + " (local rank " + e.localRank + ", " + me
                        + "): " + e.getMessage() + startHint();
                publishFailure(store, desc);
                error(desc);
                finish(store, false);
                return 1;
            }
            current = group;
            if (shuttingDown) {
                group.stop();
                return 1;
            }
            WorkerGroup.Outcome outcome;
            FailureWatcher watcher = cfg.nnodes() > 1 ? new FailureWatcher(store, cfg.endpoint(), cfg.nodeRank(),
                    group::takeStallWarnings, line -> Notices.warn(cfg.err(), line)) : null;
            try {
                outcome = group.monitor(new WorkerGroup.Watch() {
                    @Override
                    public String remoteFailure() {
                        return watcher == null ? null : watcher.failure();
                    }

                    @Override
                    public String lost() {
                        return keepAlive == null ? null : keepAlive.lost();
                    }

                    @Override
                    public boolean storeLost() {
                        return keepAlive != null && keepAlive.storeLost();
                    }

                    @Override
                    public boolean shuttingDown() {
                        return shuttingDown;
                    }

                    @Override
                    public void hung(List<String> descriptions) {
                        if (!descriptions.isEmpty()) {
                            Notices.warn(cfg.err(), me + ": " + String.join("; ", descriptions)
                                    + "; the other ranks wait for it until their collective timeout");
                        }
                        if (watcher != null) {
                            watcher.reportHung(descriptions);
                        }
                    }
                });
            } finally {
                if (watcher != null) {
                    watcher.close();
                }
            }
            current = null;
            LOG.debug("{}: attempt {} ended: {}", me, attempt, outcome);
            if (shuttingDown) {
                return 1;
            }
            if (outcome instanceof WorkerGroup.Succeeded) {
                return finish(store, true);
            } else if (outcome instanceof WorkerGroup.LocalFailure f) {
                // The root cause among this node's failed workers: the earliest that did not fail
                // from a peer, by their error files; else the first to exit.
                int[] first = {f.rank(), f.localRank(), f.exitCode()};
                int[] primary = earliestOwnFailure(attempt, group, first);
                WorkerError own = errorOf(attempt, primary[0]);
                // A worker that recorded its own failure before the first exit of a consequence: named by it.
                String desc = primary == first ? describeFailed(group, primary, argv, attemptStart)
                        : RootCause.describeError(primary[0], cfg.nodeRank(), primary[1], own);
                List<String> errTail = group.errTail(primary[1]);
                String candidate = unreachable(store, f, desc, own, errTail, r);
                int peer = own != null ? own.peerRank() : RootCause.peerNamedIn(errTail);
                boolean peerFirst = peer >= 0 && (own == null || own.fromPeer())
                        && nodeOf(peer, r.nprocByNode()) != cfg.nodeRank();
                String cause = rootCause(store, f, candidate, peerFirst);
                List<String> consequences = new ArrayList<>();
                List<String> ownFailures = new ArrayList<>();
                if (!cause.equals(candidate)) {
                    consequences.add(desc);
                }
                List<int[]> failed = new ArrayList<>(f.alsoFailed());
                failed.add(0, first);
                for (int[] other : failed) {
                    if (other[0] == primary[0]) {
                        continue;
                    }
                    String otherDesc = describeFailed(group, other, argv, attemptStart);
                    WorkerError otherError = errorOf(attempt, other[0]);
                    boolean fromPeer = otherError != null ? otherError.fromPeer()
                            : RootCause.failedOnAPeer(group.errTail(other[1]));
                    (fromPeer ? consequences : ownFailures).add(otherDesc);
                }
                if (own != null && primary == first) {
                    error(me + ": " + desc + ": its error file says " + RootCause.errorLine(own));
                }
                String stopped = f.stopped() == 0 ? "no other local worker was still running"
                        : "stopped the other " + f.stopped() + " running worker(s)";
                if (cause.equals(desc)) {
                    error(desc + "; " + stopped);
                } else if (cause.equals(candidate)) {
                    error(me + ": " + cause + "; " + stopped);
                } else {
                    error(me + ": " + desc + ", a consequence of: " + cause + "; " + stopped);
                }
                summary(cause, consequences, ownFailures);
                if (keepAlive != null && keepAlive.lost() != null) {
                    return finishLost(store);
                }
            } else if (outcome instanceof WorkerGroup.RemoteFailure f) {
                error(me + ": " + f.message() + "; stopped the " + f.stopped() + " local worker(s)");
                summary(f.message(), List.of(), List.of());
                if (keepAlive != null && keepAlive.lost() != null) {
                    return finishLost(store);
                }
            } else {
                return 1;
            }
            flightRecorderSummary(attemptStart);
            if (attempt >= cfg.maxRestarts()) {
                finish(store, false);
                return 1;
            }
            error("restarting the worker group of " + me + " (restart " + (attempt + 1) + " of " + cfg.maxRestarts() + ")");
        }
    }

    /** The environment of the worker with local rank {@code local}. */
    private Map<String, String> workerEnv(int local, NodeRendezvous.NodeRanks r, int attempt) {
        Map<String, String> env = new HashMap<>(cfg.env());
        // No OMP_NUM_THREADS=1 as torchrun sets: each worker divides the node's CPUs by LOCAL_WORLD_SIZE itself.
        if (local == 0 && attempt == 0) {
            Notices.info(cfg.err(), WorkerThreads.notice(env, cfg.nprocPerNode(), WorkerThreads.affinityCpus()));
        }
        env.put("RANK", Integer.toString(r.rankOffset() + local));
        env.put("LOCAL_RANK", Integer.toString(local));
        env.put("WORLD_SIZE", Integer.toString(r.worldSize()));
        env.put("LOCAL_WORLD_SIZE", Integer.toString(cfg.nprocPerNode()));
        env.put("GROUP_RANK", Integer.toString(cfg.nodeRank()));
        env.put("GROUP_WORLD_SIZE", Integer.toString(cfg.nnodes()));
        env.put("MASTER_ADDR", cfg.masterAddr());
        env.put("MASTER_PORT", Integer.toString(cfg.masterPort()));
        env.put(Setting.AGENT_STORE.variable(), "1");
        env.put(Setting.RESTART_COUNT.variable(), Integer.toString(attempt));
        env.put(Setting.MAX_RESTARTS.variable(), Integer.toString(cfg.maxRestarts()));
        env.put(RankZeroProgress.ENV, RankZeroProgress.forRank(r.rankOffset() + local, cfg.progressBar()));
        if (runFolder != null) {
            env.put(ErrorFile.ENV, runFolder.errorFile(attempt, r.rankOffset() + local).toString());
        }
        return env;
    }

    /**
     * Names a failed worker ({rank, local rank, exit code}): a JVM that died of a fatal error and left
     * its crash log (hs_err) as crashed, naming the log; otherwise by its exit code or signal.
     */
    private String describeFailed(WorkerGroup group, int[] w, List<String> argv, long sinceMillis) {
        Path log = FatalErrorLog.find(group.workers().get(w[1]).process().pid(), Path.of("").toAbsolutePath(),
                FatalErrorLog.errorFile(argv), sinceMillis);
        return log != null ? RootCause.describeCrash(w[0], cfg.nodeRank(), w[1], log)
                : RootCause.describe(w[0], cfg.nodeRank(), w[1], w[2]);
    }

    /** The failure rank {@code rank} recorded in its error file in {@code attempt}, or null (none, or unreadable). */
    private WorkerError errorOf(int attempt, int rank) {
        return runFolder == null ? null : ErrorFile.read(runFolder.errorFile(attempt, rank));
    }

    /**
     * The local worker ({rank, local rank, exit code}) whose error file records the earliest failure
     * that did not come from a peer, also one the launcher stopped after it recorded it; {@code first}
     * (the first to exit) when it is that worker or when no worker recorded one of its own (no files:
     * the first to exit, as before error files).
     */
    private int[] earliestOwnFailure(int attempt, WorkerGroup group, int[] first) {
        int[] best = first;
        long bestMillis = Long.MAX_VALUE;
        for (WorkerGroup.Worker w : group.workers()) {
            WorkerError e = errorOf(attempt, w.rank());
            if (e != null && !e.fromPeer() && e.timestampMillis() < bestMillis) {
                bestMillis = e.timestampMillis();
                best = w.rank() == first[0] ? first
                        : new int[] {w.rank(), w.localRank(), w.process().isAlive() ? 0 : w.process().exitValue()};
            }
        }
        return best;
    }

    /** Records the first failure of an attempt for the other nodes; best effort. */
    private void publishFailure(Store store, String desc) {
        if (cfg.nnodes() == 1) {
            return;
        }
        try {
            RootCause.claim(store, desc);
        } catch (RuntimeException e) {
            Notices.warn(cfg.err(), "could not tell the other nodes about the failure: " + e);
        }
    }

    /**
     * The root cause of a local worker's failure: the failure itself on a single node; else as
     * agreed through the store ({@link RootCause}), or the lost node when the keep-alive lost one.
     */
    private String rootCause(Store store, WorkerGroup.LocalFailure f, String desc, boolean peerFirst)
            throws InterruptedException {
        // A local worker that was stopped when another failed is the cause: it took part in nothing.
        String hung = f.hung().isEmpty() ? null : f.hung().get(0);
        if (keepAlive == null) {
            return hung != null ? hung : desc;
        }
        if (keepAlive.storeLost()) {
            return keepAlive.lost();
        }
        if (hung != null) {
            try {
                return RootCause.claim(store, hung);
            } catch (RuntimeException e) {
                LOG.warn("could not tell the other nodes that {}: {}", hung, e.toString());
                return hung;
            }
        }
        return RootCause.decide(store, f.exitCode(), f.exitMillis(), desc, cfg.nnodes(), peerFirst, keepAlive::lost,
                keepAlive::selfPause, keepAlive::anyLate, cfg.keepAliveTimeout().plus(RootCause.GRACE));
    }

    /**
     * What to name as the cause of a local worker's failure when it was a collective timeout with the
     * peer's launcher alive and no worker stopped anywhere: the network between this node and the
     * peer's ({@link RootCause#describeUnreachable}); else {@code desc}. The peer is the rank the
     * timeout waited for (on another node; from the worker's error file {@code own}, else from its
     * stderr), else the other node of a two-node job.
     */
    private String unreachable(Store store, WorkerGroup.LocalFailure f, String desc, WorkerError own,
            List<String> errTail, NodeRendezvous.NodeRanks r) {
        if (keepAlive == null || keepAlive.lost() != null || !f.hung().isEmpty() || RootCause.killedBySignal(f.exitCode())) {
            return desc;
        }
        RootCause.Timeout timeout = own != null ? RootCause.Timeout.of(own) : RootCause.collectiveTimeout(errTail);
        if (timeout == null) {
            return desc;
        }
        int peerRank = timeout.peerRank();
        int peerNode = peerRank >= 0 ? nodeOf(peerRank, r.nprocByNode()) : cfg.nnodes() == 2 ? 1 - cfg.nodeRank() : -1;
        if (peerNode == cfg.nodeRank()) {
            return desc; // a peer on this host: no network between them
        }
        long half = keepAlive.timeout().toMillis() / 2;
        String alive;
        long ago = peerNode >= 0 ? keepAlive.heardAgoMillis(peerNode) : -1;
        if (ago >= 0) {
            if (ago > half) {
                return desc;
            }
            alive = "the launcher of " + keepAlive.name(peerNode) + " was alive (its keep-alive arrived "
                    + KeepAlive.seconds(java.time.Duration.ofMillis(ago / 100 * 100)) + " s ago)";
        } else {
            long storeAgo = keepAlive.storeAnsweredAgoMillis();
            if (storeAgo > half) {
                return desc;
            }
            alive = "the launchers' keep-alive kept arriving (the store answered "
                    + KeepAlive.seconds(java.time.Duration.ofMillis(storeAgo / 100 * 100)) + " s ago)";
        }
        try {
            if (RootCause.hungElsewhere(store, cfg.nnodes()) != null) {
                return desc;
            }
        } catch (RuntimeException e) {
            return desc;
        }
        return RootCause.describeUnreachable(desc, keepAlive.name(cfg.nodeRank()),
                peerNode >= 0 ? keepAlive.name(peerNode) : null, alive, timeout);
    }

    /** The node holding global rank {@code rank}, or -1. */
    private static int nodeOf(int rank, int[] nprocByNode) {
        int first = 0;
        for (int node = 0; node < nprocByNode.length; node++) {
            if (rank < first + nprocByNode[node]) {
                return node;
            }
            first += nprocByNode[node];
        }
        return -1;
    }

    /** After a failed attempt: where the ranks parted, when this node's workers left flight-recorder dumps. */
    private void flightRecorderSummary(long sinceMillis) {
        try {
            List<Path> dumps = FlightRecorderDump.find(FlightRecorderDump.directory(cfg.env()), sinceMillis);
            if (!dumps.isEmpty()) {
                error(FlightRecorderReport.summarize(dumps).replace("\n", "\nddp4j-run: "));
            }
        } catch (IOException | RuntimeException e) {
            error("flight recorder: " + e.getMessage());
        }
    }

    /**
     * The last line of a failed attempt: the root cause, then what failed because of it, then the
     * other local workers that failed at the same time with no distributed error (each on its own).
     */
    private void summary(String cause, List<String> consequences, List<String> ownFailures) {
        String paused = keepAlive == null ? null : keepAlive.selfPause();
        if (paused != null && !cause.contains(paused)) {
            // Another node reported this node lost: this launcher knows why.
            cause = cause + " (" + paused + ")";
        }
        error(me + ": the job failed; root cause: " + cause
                + (consequences.isEmpty() ? "" : "; failed as a consequence: " + String.join(", ", consequences))
                + (ownFailures.isEmpty() ? "" : "; also failed, on its own: " + String.join(", ", ownFailures)));
    }

    /**
     * Ends the job after the keep-alive lost a node: no restart (the lost node cannot rejoin). Tells
     * the other nodes, when the store is still there, and lets them read it.
     */
    private int finishLost(Store store) throws InterruptedException {
        if (keepAlive.storeLost()) {
            return 1;
        }
        publishFailure(store, keepAlive.lost());
        return finish(store, false);
    }

    /**
     * The exit barrier. Every node records that it is done; node 0, which serves the store, keeps
     * it up until all nodes are done (after a success: up to the rendezvous timeout, watching for a
     * failure elsewhere; after a failure: briefly, so the others can read the failure).
     */
    private int finish(Store store, boolean success) throws InterruptedException {
        int code = success ? 0 : 1;
        if (cfg.nnodes() == 1 || keepAlive.storeLost()) {
            return code;
        }
        try {
            store.set(exitKey(cfg.nodeRank()), NodeRendezvous.bytes(code));
        } catch (RuntimeException e) {
            LOG.debug("could not record the exit of {}: {}", me, e.toString());
            return code;
        }
        if (cfg.nodeRank() != 0) {
            return code;
        }
        try {
            return exitBarrier(store, success, code);
        } catch (RuntimeException e) {
            Notices.warn(cfg.err(), me + ": exit barrier: " + e);
            return code;
        }
    }

    private int exitBarrier(Store store, boolean success, int code) throws InterruptedException {
        Duration limit = success ? cfg.rdzvTimeout() : FAILURE_LINGER;
        long deadline = System.nanoTime() + limit.toNanos();
        List<Integer> missing = missingExits(store);
        while (!missing.isEmpty() && System.nanoTime() < deadline && !shuttingDown) {
            String lost = keepAlive.lost();
            if (success && lost != null) {
                error(me + ": the workers of this node finished, but " + lost);
                summary(lost, List.of(), List.of());
                success = false;
                code = 1;
                deadline = Math.min(deadline, System.nanoTime() + FAILURE_LINGER.toNanos());
                publishFailure(store, lost);
            } else if (success && store.check(List.of(FailureWatcher.FAILED_KEY))) {
                String desc = NodeRendezvous.string(store.get(FailureWatcher.FAILED_KEY));
                error(me + ": the workers of this node finished, but " + desc);
                success = false;
                code = 1;
                deadline = Math.min(deadline, System.nanoTime() + FAILURE_LINGER.toNanos());
            }
            Thread.sleep(FailureWatcher.POLL_INTERVAL.toMillis());
            missing = missingExits(store);
        }
        String lost = keepAlive.lost();
        if (success && lost != null) {
            // The lost node dropped out of the missing list; its loss still fails the job.
            error(me + ": the workers of this node finished, but " + lost);
            summary(lost, List.of(), List.of());
            code = 1;
        }
        if (!missing.isEmpty() && !shuttingDown) {
            Notices.warn(cfg.err(), me + ": node rank(s) " + missing.stream().map(String::valueOf)
                    .collect(Collectors.joining(", ")) + " did not finish within " + limit.toSeconds() + " s; closing the store");
        }
        return code;
    }

    private List<Integer> missingExits(Store store) {
        List<Integer> missing = new ArrayList<>();
        for (int node = 0; node < cfg.nnodes(); node++) {
            // A lost node never comes; one that left the keep-alive is done even if its exit key was lost.
            if (!keepAlive.isLost(node) && !keepAlive.hasLeft(node) && !store.check(List.of(exitKey(node)))) {
                missing.add(node);
            }
        }
        return missing;
    }

    /** The key a node sets in an attempt's store when it is done with the job. */
    static String exitKey(int nodeRank) {
        return "exit/" + nodeRank;
    }

    /** The shutdown hook: on SIGINT/SIGTERM tell the other nodes, then stop the workers. */
    private void onShutdown() {
        shuttingDown = true;
        WorkerGroup g = current;
        Store store = currentStore;
        if (g == null) {
            return;
        }
        cfg.err().println("ddp4j-run: " + me + " was asked to stop; stopping its workers");
        cfg.err().flush();
        if (store != null && cfg.nnodes() > 1) {
            Thread notify = new Thread(() -> publishFailure(store, "the launcher of " + me + " was stopped by a signal"),
                    "ddp4j-run-notify");
            notify.setDaemon(true);
            notify.start();
            try {
                notify.join(HOOK_NOTIFY.toMillis());
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        g.stop();
        if (cfg.nodeRank() == 0 && cfg.nnodes() > 1) {
            // This JVM serves the store: keep it up a few polls longer so the others read the failure.
            try {
                Thread.sleep(3 * FailureWatcher.POLL_INTERVAL.toMillis());
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    private String startHint() {
        String first = cfg.command().get(0);
        if (WorkerCommand.looksLikeClassName(first)) {
            return " (" + first + " is not a class on the launcher's class path either; check the name and the class path)";
        }
        return "";
    }

    private void error(String message) {
        cfg.err().println("ddp4j-run: " + message);
        cfg.err().flush();
    }

    private static boolean isLoopback(String host) {
        return host.equals("localhost") || host.startsWith("127.") || host.equals("::1");
    }
}
