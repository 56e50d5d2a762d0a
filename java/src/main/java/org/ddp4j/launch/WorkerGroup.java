package org.ddp4j.launch;

import java.io.IOException;
import java.io.PrintStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.IntFunction;
import org.ddp4j.distributed.DumpSignal;
import org.ddp4j.multiprocessing.OutputPump;
import org.ddp4j.multiprocessing.Processes;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The worker processes of one node for one attempt: starts them with their environment, copies
 * their output with rank prefixes, watches their exit codes and stops them (process trees
 * included) when one fails, another node fails, or the launcher is told to stop.
 */
final class WorkerGroup {

    private static final Logger LOG = LoggerFactory.getLogger(WorkerGroup.class);

    /** How often {@link #monitor} looks at the workers. */
    static final Duration MONITOR_INTERVAL = Duration.ofMillis(50);

    /** How long stopped workers get between SIGTERM and SIGKILL. */
    static final Duration STOP_GRACE = Duration.ofSeconds(3);

    /** How long to wait for the output threads once the workers are gone. */
    private static final Duration DRAIN = Duration.ofSeconds(2);

    /**
     * One local worker; {@code exitedAt} receives the wall-clock time (ms) of its exit as soon as the
     * JDK reaps it, which orders failures on different nodes (see {@link RootCause}).
     */
    record Worker(int rank, int localRank, Process process, java.util.concurrent.atomic.AtomicLong exitedAt) {
        /** When the worker exited (ms since the epoch), or now if that was not recorded yet. */
        long exitMillis() {
            long t = exitedAt.get();
            return t > 0 ? t : System.currentTimeMillis();
        }
    }

    /** How a group ended. */
    sealed interface Outcome {}

    /** Every worker exited with code 0. */
    record Succeeded() implements Outcome {}

    /**
     * A local worker exited non-zero (the first to exit, at {@code exitMillis}, wall clock);
     * {@code stopped} others were still running and were stopped; {@code alsoFailed} are the other
     * local workers that had already exited non-zero by then, as {@code {rank, localRank, exitCode}};
     * {@code hung} describes the local workers that were stopped (state T) at that moment: a peer's
     * collective that timed out is their consequence (see {@link RootCause#describeHung}).
     */
    record LocalFailure(int rank, int localRank, int exitCode, long exitMillis, int stopped, List<int[]> alsoFailed,
            List<String> hung) implements Outcome {}

    /**
     * A problem elsewhere: another node's worker failed, or a node (or the store) was lost; with
     * {@code storeLost} the store can no longer be reached.
     */
    record RemoteFailure(String message, boolean storeLost, int stopped) implements Outcome {}

    /** The launcher is shutting down (signal); the workers were stopped. */
    record Interrupted(int stopped) implements Outcome {}

    /** What {@link #monitor} asks about besides the local workers. */
    interface Watch {
        /** A message if another node's worker failed, else null. */
        String remoteFailure();

        /** A message if the keep-alive declared a node (or the store) lost, else null. */
        String lost();

        /** Whether the lost node is the one serving the store, so the store cannot be used any more. */
        boolean storeLost();

        /** Whether the launcher is shutting down. */
        boolean shuttingDown();

        /**
         * Called when the set of stopped local workers changes (see {@link #hungWorkers()}):
         * their descriptions, empty when none is stopped any more.
         */
        default void hung(List<String> descriptions) {}
    }

    /** How often {@link #monitor} looks for stopped workers, in monitor intervals (500 ms). */
    private static final int HUNG_CHECK_EVERY = 10;

    /** How a worker's stall warning line starts (FlightRecorderMonitor's inspector writes it to stderr). */
    static final String STALL_WARNING = "ddp4j: stall: ";

    /** How many of each worker's last stderr lines are kept, so a failure can be read (its exception). */
    private static final int ERR_TAIL = 40;

    private final List<Worker> workers;
    private final List<Thread> pumps;
    private final List<OutputPump> errPumps = new ArrayList<>();
    /** The workers' stall warnings not yet taken by {@link #takeStallWarnings()}, each "[rankN]: ddp4j: stall: ...". */
    private final ConcurrentLinkedQueue<String> stallWarnings = new ConcurrentLinkedQueue<>();
    private final int nodeRank;

    private WorkerGroup(List<Worker> workers, List<Thread> pumps, int nodeRank) {
        this.workers = workers;
        this.pumps = pumps;
        this.nodeRank = nodeRank;
    }

    /**
     * The last lines the worker with local rank {@code localRank} wrote to stderr (complete once
     * {@link #monitor} returned, which drains the output).
     */
    List<String> errTail(int localRank) {
        return localRank < errPumps.size() ? errPumps.get(localRank).tail() : List.of();
    }

    /**
     * The stall warnings ({@code ddp4j: stall: ...}, see the flight recorder's inspector) the workers
     * wrote since the last call, each with its {@code [rankN]: } prefix, oldest first; the launcher
     * relays them to the other nodes, whose launchers do not see this node's output.
     */
    List<String> takeStallWarnings() {
        List<String> out = new ArrayList<>();
        for (String w; (w = stallWarnings.poll()) != null; ) {
            out.add(w);
        }
        return out;
    }

    /** A worker that could not be started, after the ones started before it were stopped. */
    static final class StartException extends Exception {
        final int rank;
        final int localRank;

        StartException(int rank, int localRank, IOException cause) {
            super(cause.getMessage(), cause);
            this.rank = rank;
            this.localRank = localRank;
        }
    }

    /**
     * Starts {@code count} workers with global ranks {@code rankOffset .. rankOffset+count-1}.
     *
     * @param argv the command line of every worker
     * @param envForLocalRank the full environment of the worker with a given local rank
     * @throws StartException if a process cannot be started (the others are stopped first)
     */
    static WorkerGroup start(
            List<String> argv,
            int count,
            int rankOffset,
            int nodeRank,
            IntFunction<Map<String, String>> envForLocalRank,
            PrintStream out,
            PrintStream err)
            throws StartException {
        List<Worker> workers = new ArrayList<>();
        List<Thread> pumps = new ArrayList<>();
        WorkerGroup group = new WorkerGroup(workers, pumps, nodeRank);
        for (int local = 0; local < count; local++) {
            int rank = rankOffset + local;
            ProcessBuilder pb = new ProcessBuilder(argv);
            pb.environment().clear();
            pb.environment().putAll(envForLocalRank.apply(local));
            DumpSignal.moveSuspendSignal(pb.environment()); // so that SIGUSR2 asks for a dump, not a JVM crash
            Process p;
            try {
                p = pb.start();
            } catch (IOException e) {
                group.stop();
                throw new StartException(rank, local, e);
            }
            // The worker's stdin stays open and silent: its lifeline. When this launcher dies, however it
            // dies, the worker reads end of file and exits (see WorkerMain and WorkerCommand).
            java.util.concurrent.atomic.AtomicLong exitedAt = new java.util.concurrent.atomic.AtomicLong();
            p.onExit().thenRun(() -> exitedAt.compareAndSet(0, System.currentTimeMillis()));
            workers.add(new Worker(rank, local, p, exitedAt));
            String prefix = "[rank" + rank + "]: ";
            pumps.add(new OutputPump(p.getInputStream(), out, prefix, 0).start("ddp4j-run-rank" + rank + "-out"));
            OutputPump errPump = new OutputPump(p.getErrorStream(), err, prefix, ERR_TAIL).listen(line -> {
                if (line.startsWith(STALL_WARNING)) {
                    group.stallWarnings.add(prefix + line);
                }
            });
            group.errPumps.add(errPump);
            pumps.add(errPump.start("ddp4j-run-rank" + rank + "-err"));
            LOG.debug("started worker rank {} (local rank {}, node {}) as pid {}", rank, local, nodeRank, p.pid());
        }
        return group;
    }

    /** The workers, in local rank order. */
    List<Worker> workers() {
        return List.copyOf(workers);
    }

    /**
     * Waits until every worker exited 0, or one failed, or {@code watch} reports a problem; stops the
     * remaining workers in the latter cases; then drains their output.
     */
    Outcome monitor(Watch watch) throws InterruptedException {
        Outcome outcome = null;
        List<String> hungSeen = List.of();
        for (int round = 0; outcome == null; round++) {
            if (round % HUNG_CHECK_EVERY == 0) {
                List<String> hung = hungWorkers();
                if (!hung.equals(hungSeen)) {
                    hungSeen = hung;
                    LOG.debug("node {}: stopped workers now {}", nodeRank, hung);
                    watch.hung(hung);
                }
            }
            boolean allDone = true;
            Worker first = null;
            List<int[]> others = new ArrayList<>();
            for (Worker w : workers) {
                if (w.process().isAlive()) {
                    allDone = false;
                    continue;
                }
                int code = w.process().exitValue();
                if (code != 0) {
                    if (first == null || w.exitMillis() < first.exitMillis()) {
                        first = w;
                    }
                }
            }
            if (first != null) {
                for (Worker w : workers) {
                    if (w != first && !w.process().isAlive() && w.process().exitValue() != 0) {
                        others.add(new int[] {w.rank(), w.localRank(), w.process().exitValue()});
                    }
                }
                List<String> hung = hungWorkers(); // before stop(): the stopped ones die with the rest
                int stopped = stop();
                outcome = new LocalFailure(first.rank(), first.localRank(), first.process().exitValue(),
                        first.exitMillis(), stopped, List.copyOf(others), hung);
                break;
            }
            if (outcome != null) {
                break;
            }
            if (allDone) {
                outcome = new Succeeded();
            } else if (watch.shuttingDown()) {
                outcome = new Interrupted(stop());
            } else if (watch.remoteFailure() != null) {
                outcome = new RemoteFailure(watch.remoteFailure(), false, stop());
            } else if (watch.lost() != null) {
                outcome = new RemoteFailure(watch.lost(), watch.storeLost(), stop());
            } else {
                Thread.sleep(MONITOR_INTERVAL.toMillis());
            }
        }
        LOG.debug("node {}: workers done ({}); draining their output", nodeRank, outcome);
        closeLifelines();
        drain();
        return outcome;
    }

    /**
     * The workers that are stopped now: the worker process or one of its descendants is in state
     * {@code T} or {@code t} in {@code /proc/<pid>/stat} (SIGSTOP, Ctrl-Z, a debugger). Such a worker
     * takes part in no collective, yet its launcher's keep-alive goes on: without this check its
     * peers' timeouts would be blamed on them. Empty where there is no procfs.
     */
    List<String> hungWorkers() {
        List<String> hung = new ArrayList<>();
        for (Worker w : workers) {
            ProcessHandle h = w.process().toHandle();
            if (!h.isAlive()) {
                continue;
            }
            long stoppedPid = -1;
            char state = 0;
            // The worker itself first, then its process tree (a command worker's JVM, say).
            for (ProcessHandle p : (Iterable<ProcessHandle>) java.util.stream.Stream.concat(
                    java.util.stream.Stream.of(h), h.descendants())::iterator) {
                char c = stoppedState(p.pid());
                if (c != 0) {
                    stoppedPid = p.pid();
                    state = c;
                    break;
                }
            }
            if (stoppedPid > 0) {
                hung.add(RootCause.describeHung(w.rank(), nodeRank, w.localRank(), stoppedPid, state));
            }
        }
        return hung;
    }

    /** The state letter of {@code pid} when it is stopped ({@code T}) or stopped by a tracer ({@code t}), else 0. */
    static char stoppedState(long pid) {
        char state = Processes.state(pid);
        return Processes.isStopped(state) ? state : 0;
    }

    /**
     * Stops every worker still running and its descendants: SIGTERM, then SIGKILL for what is left
     * after {@link #STOP_GRACE}. Returns how many workers were still running.
     */
    int stop() {
        List<ProcessHandle> targets = new ArrayList<>();
        int running = 0;
        for (Worker w : workers) {
            ProcessHandle h = w.process().toHandle();
            if (h.isAlive()) {
                running++;
            }
            // Snapshot the tree before the parent dies and its children are re-parented.
            h.descendants().forEach(targets::add);
            targets.add(h);
        }
        if (targets.stream().noneMatch(Processes::isRunning)) {
            return running;
        }
        LOG.debug("node {}: stopping {} process(es)", nodeRank, targets.size());
        targets.forEach(ProcessHandle::destroy);
        // Poll rather than onExit(): for grandchildren the JDK's onExit polls with a growing delay.
        if (!Processes.awaitExit(targets, STOP_GRACE)) {
            for (ProcessHandle h : targets) {
                if (Processes.isRunning(h)) {
                    LOG.debug("pid {} ignored SIGTERM for {}; killing it", h.pid(), STOP_GRACE);
                    h.destroyForcibly();
                }
            }
            Processes.awaitExit(targets, Duration.ofSeconds(1));
        }
        closeLifelines();
        for (Worker w : workers) {
            try {
                w.process().waitFor(1, TimeUnit.SECONDS); // reaped: no zombie left behind
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                break;
            }
        }
        return running;
    }



    /** Waits a little for the output threads so the workers' last lines come before our messages. */
    private void drain() throws InterruptedException {
        long deadline = System.nanoTime() + DRAIN.toNanos();
        for (Thread t : pumps) {
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                break;
            }
            t.join(Math.max(1, TimeUnit.NANOSECONDS.toMillis(left)));
        }
    }

    /** Closes the workers' stdin pipes: a worker still running then sees its launcher gone. */
    private void closeLifelines() {
        for (Worker w : workers) {
            try {
                w.process().getOutputStream().close();
            } catch (IOException e) {
                LOG.debug("closing the stdin of rank {}: {}", w.rank(), e.toString());
            }
        }
    }
}
