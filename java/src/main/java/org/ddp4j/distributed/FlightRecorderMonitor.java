package org.ddp4j.distributed;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.io.PrintStream;
import java.net.InetAddress;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.CodeSource;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import org.ddp4j.debug.FlightRecorderDump;
import org.ddp4j.distributed.store.Store;
import org.ddp4j.internal.FlightRecordLayout;
import org.ddp4j.internal.ProcessGroupNatives;
import org.ddp4j.internal.Setting;
import org.ddp4j.internal.AtomicFiles;
import org.ddp4j.tensor.DType;

/**
 * The Java side of the flight recorder, one per JVM: it knows the live native groups, writes this
 * rank's dump ({@link FlightRecorderDump}) when a collective fails or times out and when someone
 * touches the dump-request file, and runs the stall inspector: a daemon thread that, about once a
 * second, asks each group for its unfinished ops (one JNI call) and, when one has been running
 * longer than {@code DDP4J_STALL_WARNING_SECONDS}, prints one warning naming it and the ranks that
 * have not started it. Those ranks come from the group's store, where each rank publishes the
 * highest collective number it started: when it changed, at most every publish interval (a
 * quarter of the warning threshold, 1 to 15 s), and at once when it stalls. It only ever warns:
 * slow training is never failed by it.
 *
 * <p>Store calls run on a thread of their own with a bound, so a store that does not answer (its
 * host stopped) delays a warning by at most {@link #STORE_WAIT}, never the inspector.
 */
final class FlightRecorderMonitor {
    /**
     * The shortest DDP4J_STALL_WARNING_SECONDS: the inspector's period (up to 1 s) plus the wait for the
     * peers' numbers (0.9 s) is added to the threshold before a warning, which a shorter threshold hides.
     */
    static final Duration MIN_STALL_WARNING = Duration.ofSeconds(1);
    /** The longest the inspector or a dump waits for the store. */
    static final Duration STORE_WAIT = Duration.ofSeconds(2);
    /** The same for a dump, which a failing rank writes before it goes on: the peers' numbers are a bonus there. */
    private static final Duration DUMP_STORE_WAIT = Duration.ofMillis(500);
    /** Store key (in the group's store) of group rank r's highest started collective number: this prefix and r. */
    static final String PROGRESS_KEY = "ddp4j/flight-recorder/last-started/";

    /**
     * A counter per group rank: the collective number it last stalled in (published when it passes
     * the warning threshold), so a peer's warning can tell a rank stuck on slow data in the previous
     * collective from one that never came.
     */
    static final String STALLED_KEY = "ddp4j/flight-recorder/stalled-in/";
    /** Store key (in the group's store) of the job's identity, which every dump carries ({@link #agreeOnJob}). */
    static final String JOB_KEY = "ddp4j/flight-recorder/job";
    private static final int FIELDS = FlightRecordLayout.FIELDS;
    private static final String[] STATES = FlightRecordLayout.STATES;
    private static final String[] TRANSPORTS = FlightRecordLayout.TRANSPORTS;
    private static final String[] KINDS = {"none", "allReduce", "broadcast", "allGather", "barrier", "reduce",
        "reduceScatter", "send", "recv"};
    private static final String[] REDUCE_OPS = {"SUM", "AVG", "PRODUCT", "MIN", "MAX"};
    private static final String[] DTYPES = dtypeNames();
    private static final ObjectMapper JSON = new ObjectMapper();
    /** After a failure dump, later failures within this long write none (a broken group fails every later call). */
    private static final long FAILURE_DUMP_QUIET_NANOS = TimeUnit.SECONDS.toNanos(10);

    private static final Object LOCK = new Object(); // the registry; a group's record is read only under it
    private static final List<Tracked> GROUPS = new ArrayList<>();
    private static int nextGroupId;
    private static Thread inspector;
    private static ExecutorService storeCalls;
    private static Duration threshold;
    private static Path dumpDir;
    private static long requestSeenMillis;
    private static long lastFailureDumpNanos = Long.MIN_VALUE;
    private static boolean dumpedOnShutdown;

    /** What the inspector remembers about one group. */
    private static final class Tracked {
        final NativeProcessGroup group;
        final long handle;
        final Store store;
        final String pgId;
        final String job; // the job's identity as the group's ranks agreed on it; null: none
        long published; // the collective number last published (0: none)
        long publishedAt = System.nanoTime() - TimeUnit.HOURS.toNanos(1); // System.nanoTime of that (long ago: none yet)
        Future<?> publishing;
        long stalledRecord; // the record whose stall was published, awaiting the peers' numbers
        long stallPublishedAt;
        long warnedRecord; // the newest record warned about (records are numbered in issue order)
        long publishedStalledIn; // the collective number last published under STALLED_KEY (0: none)
        Map<Integer, Long> peersStalledIn = new TreeMap<>(); // group rank -> number, as last read
        Map<Integer, Long> peersLastStarted = new TreeMap<>(); // group rank -> number, as last read

        Tracked(NativeProcessGroup group, long handle, Store store, String pgId, String job) {
            this.group = group;
            this.handle = handle;
            this.store = store;
            this.pgId = pgId;
            this.job = job;
        }
    }

    private FlightRecorderMonitor() {}

    /**
     * Starts the inspector unless it runs; a group calls this before it creates its native group.
     *
     * @throws IllegalStateException for a bad {@code DDP4J_STALL_WARNING_SECONDS}
     */
    static void ensureStarted() {
        synchronized (LOCK) {
            if (inspector == null) {
                start();
            }
        }
    }

    /** Starts watching a group whose native handle is {@code handle}: its flight record, stalls, dumps. */
    static void register(NativeProcessGroup group, long handle, Store store) {
        String job = agreeOnJob(store); // a store call: outside LOCK, which the inspector holds
        synchronized (LOCK) {
            ensureStarted();
            GROUPS.add(new Tracked(group, handle, store, Integer.toString(nextGroupId++), job));
        }
    }

    /**
     * The identity of the job a group belongs to, the same on each of its ranks, so that dumps of
     * different jobs are not compared: the first rank to get here writes its proposal (its wall-clock
     * time, pid and a random number, e.g. {@code 2024-05-01T10:00:00.123Z-4242-9f3a1c}) under
     * {@link #JOB_KEY}, and every rank reads that one back, in one compare-set each. Each
     * initialization and each launcher attempt has a key space of its own, hence an identity of its
     * own. Null, with a line on stderr, when the store fails: the dumps then carry none.
     */
    static String agreeOnJob(Store store) {
        String mine = Instant.now() + "-" + ProcessHandle.current().pid() + "-"
                + String.format(java.util.Locale.ROOT, "%06x", ThreadLocalRandom.current().nextInt(1 << 24));
        try {
            return new String(store.compareSet(JOB_KEY, new byte[0], mine.getBytes(StandardCharsets.UTF_8)),
                    StandardCharsets.UTF_8);
        } catch (RuntimeException e) {
            System.err.println("ddp4j: flight recorder: the ranks could not agree on a job id through the store (" + e
                    + "); this rank's dumps carry none");
            return null;
        }
    }

    /** Stops watching a group; after it returns the group's native handle is not read again. */
    static void unregister(NativeProcessGroup group) {
        synchronized (LOCK) {
            GROUPS.removeIf(t -> t.group == group);
        }
    }

    /**
     * DDP4J_STALL_WARNING_SECONDS, or 60 s when unset.
     *
     * @throws IllegalStateException naming the variable for a value that is not a number of seconds
     *     of at least {@link #MIN_STALL_WARNING}
     */
    static Duration stallThreshold(Map<String, String> env) {
        Duration threshold = Setting.STALL_WARNING_SECONDS.seconds(env, Duration.ofSeconds(60));
        if (threshold.compareTo(MIN_STALL_WARNING) < 0) {
            throw Setting.STALL_WARNING_SECONDS.bad(Setting.STALL_WARNING_SECONDS.raw(env), "a number of seconds of at"
                    + " least " + MIN_STALL_WARNING.toSeconds() + ": the stall inspector looks about once a second and reads"
                    + " the peers' progress a second after a stall, so a shorter stall would end before its warning");
        }
        return threshold;
    }

    private static void start() {
        Map<String, String> env = System.getenv();
        threshold = stallThreshold(env);
        dumpDir = FlightRecorderDump.directory(env);
        requestSeenMillis = requestMillis(); // a request touched before this JVM started is not for it
        storeCalls = Executors.newSingleThreadExecutor(r -> {
            Thread t = new Thread(r, "ddp4j-flight-recorder-store");
            t.setDaemon(true);
            return t;
        });
        inspector = new Thread(FlightRecorderMonitor::inspect, "ddp4j-flight-recorder");
        inspector.setDaemon(true);
        inspector.start();
        Runtime.getRuntime().addShutdownHook(new Thread(FlightRecorderMonitor::onShutdown,
                "ddp4j-flight-recorder-shutdown"));
    }

    // ---------------------------------------------------------------------------------------------
    // The inspector thread.

    private static void inspect() {
        long pollMillis = Math.max(100, Math.min(1000, threshold.toMillis() / 4));
        while (true) {
            try {
                Thread.sleep(pollMillis);
                long request = requestMillis();
                if (request > requestSeenMillis) {
                    requestSeenMillis = request;
                    dump("on request (" + dumpDir.resolve(FlightRecorderDump.REQUEST_FILE) + " was touched)");
                }
                List<String> warnings = new ArrayList<>();
                synchronized (LOCK) {
                    for (Tracked t : GROUPS) {
                        String w = inspect(t);
                        if (w != null) {
                            warnings.add(w);
                        }
                    }
                }
                for (String w : warnings) {
                    PrintStream err = System.err;
                    err.println(w);
                    err.flush();
                }
            } catch (InterruptedException e) {
                return;
            } catch (RuntimeException e) {
                // the inspector must outlive whatever one round ran into (a group closing under it)
                System.err.println("ddp4j: flight recorder: " + e);
            }
        }
    }

    /** One round for one group (under LOCK); returns a stall warning to print, or null. */
    private static String inspect(Tracked t) {
        long[] rec = ProcessGroupNatives.flightRecord(t.handle, true);
        if (rec[FlightRecordLayout.HEADER_CAPACITY] == 0) {
            return null; // recorder off
        }
        long lastStarted = rec[FlightRecordLayout.HEADER_LAST_STARTED];
        long now = rec[FlightRecordLayout.HEADER_STEADY_NOW];
        long publishEvery = Math.max(TimeUnit.SECONDS.toNanos(1), Math.min(TimeUnit.SECONDS.toNanos(15),
                threshold.toNanos() / 4));
        if (lastStarted != t.published && System.nanoTime() - t.publishedAt >= publishEvery) {
            publish(t, lastStarted);
        }
        // The oldest started, unfinished op newer than the last one warned about: the one this rank
        // waits in (a transfer warned about long ago, say a recv that waits on purpose, does not
        // hide a collective stalled after it).
        int at = -1;
        for (int i = FlightRecordLayout.HEADER; i + FIELDS <= rec.length; i += FIELDS) {
            if (rec[i + FlightRecordLayout.STATE] == FlightRecordLayout.STATE_STARTED && rec[i] > t.warnedRecord) {
                at = i;
                break;
            }
        }
        if (at < 0) {
            return null;
        }
        long record = rec[at + FlightRecordLayout.RECORD_ID];
        long waited = now - rec[at + FlightRecordLayout.STARTED_NS];
        if (waited < threshold.toNanos()) {
            return null;
        }
        if (t.stalledRecord != record) {
            // Publish first and read the peers a round later, so that peers stalled in the same
            // op have published theirs too.
            t.stalledRecord = record;
            t.stallPublishedAt = System.nanoTime();
            publish(t, lastStarted);
            if (!FlightRecordLayout.isTransfer(rec[at + FlightRecordLayout.KIND])) { // a collective (a transfer's number counts its stream)
                publishStalledIn(t, rec[at + FlightRecordLayout.SEQ]);
            }
            return null;
        }
        if (System.nanoTime() - t.stallPublishedAt < TimeUnit.MILLISECONDS.toNanos(900)) {
            return null;
        }
        t.warnedRecord = record;
        return stallWarning(t, rec, at, waited);
    }

    private static void publish(Tracked t, long lastStarted) {
        if (t.publishing != null && !t.publishing.isDone()) {
            return; // the store is slow: never queue up calls behind it
        }
        long delta = lastStarted - t.published;
        t.published = lastStarted;
        t.publishedAt = System.nanoTime();
        String key = PROGRESS_KEY + t.group.rank();
        t.publishing = storeCalls.submit(() -> t.store.add(key, delta));
    }

    private static void publishStalledIn(Tracked t, long seq) {
        long delta = seq - t.publishedStalledIn;
        if (delta <= 0) {
            return; // not newer than the one published
        }
        t.publishedStalledIn = seq;
        String key = STALLED_KEY + t.group.rank();
        storeCalls.submit(() -> t.store.add(key, delta));
    }

    private static String stallWarning(Tracked t, long[] rec, int at, long waitedNanos) {
        NativeProcessGroup g = t.group;
        long seq = rec[at + FlightRecordLayout.SEQ];
        int kind = (int) rec[at + FlightRecordLayout.KIND];
        String call = describe(rec, at);
        StringBuilder m = new StringBuilder("ddp4j: stall: rank ").append(globalRank(g, g.rank()))
                .append(" has waited ").append(seconds(waitedNanos)).append(" in ").append(call)
                .append(" (over ").append(name(TRANSPORTS, rec[at + FlightRecordLayout.TRANSPORT])).append(")");
        if (FlightRecordLayout.isTransfer(kind)) {
            int peer = (int) rec[at + FlightRecordLayout.PEER];
            m.append("; rank ").append(globalRank(g, peer)).append(" has not taken part yet (it may not have called the matching ")
                    .append(kind == FlightRecordLayout.KIND_SEND ? "recv" : "send").append(")");
        } else {
            Map<Integer, Long> peers = readPeers(t, STORE_WAIT);
            if (peers == null) {
                m.append("; the store did not answer within ").append(STORE_WAIT.toSeconds())
                        .append(" s, so which ranks have not started it is unknown");
            } else {
                List<String> behind = new ArrayList<>();
                boolean allStuckOnData = true; // every rank behind waits in the previous collective's data
                for (int r = 0; r < g.size(); r++) {
                    long theirs = peers.getOrDefault(r, 0L);
                    if (r != g.rank() && theirs < seq) {
                        // This rank completed #seq-1, which took every rank: a fresher number than a
                        // report up to a publish interval old.
                        long known = Math.max(theirs, seq - 1);
                        boolean stuckInIt = theirs > 0 && t.peersStalledIn.getOrDefault(r, 0L) == theirs;
                        allStuckOnData &= stuckInIt;
                        behind.add(globalRank(g, r) + (stuckInIt ? " (itself still waiting in #" + theirs + ", longer than "
                                + seconds(threshold.toNanos()) + ": the data of #" + theirs + " is slow to reach it, e.g. a"
                                + " slow or lossy network)" : known > 0 ? " (got as far as #" + known + ")" : " (started none yet)"));
                    }
                }
                if (behind.isEmpty()) {
                    m.append("; every rank has started it, so its data is slow to arrive (a slow or lossy network"
                            + " between hosts, or an overloaded machine)");
                } else {
                    m.append("; not yet started by ").append(behind.size() == 1 ? "rank " : "ranks ")
                            .append(String.join(", ", behind)).append(allStuckOnData
                                    ? ": the ranks are slowed by data in transit, not stopped"
                                    : ": a rank that never starts it is stopped, stuck or on another code path");
                }
            }
        }
        m.append(". Still waiting, up to the group's timeout of ").append(seconds(g.timeout().toNanos()))
                .append(" (this warning appears after ").append(Setting.STALL_WARNING_SECONDS.variable()).append(" = ")
                .append(seconds(threshold.toNanos())).append("; touch ")
                .append(dumpDir.resolve(FlightRecorderDump.REQUEST_FILE)).append(" to make every rank dump its flight record)");
        return m.toString();
    }

    /** The peers' published numbers by group rank, or null when the store did not answer in time. */
    private static Map<Integer, Long> readPeers(Tracked t, Duration wait) {
        int size = t.group.size();
        int self = t.group.rank();
        Future<Map<Integer, Long>> read = storeCalls.submit(() -> {
            Map<Integer, Long> out = new TreeMap<>();
            Map<Integer, Long> stalledIn = new TreeMap<>();
            for (int r = 0; r < size; r++) {
                if (r != self) {
                    out.put(r, t.store.add(PROGRESS_KEY + r, 0));
                    stalledIn.put(r, t.store.add(STALLED_KEY + r, 0));
                }
            }
            t.peersStalledIn = stalledIn;
            return out;
        });
        try {
            Map<Integer, Long> peers = read.get(wait.toMillis(), TimeUnit.MILLISECONDS);
            t.peersLastStarted = peers;
            return peers;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return null;
        } catch (Exception e) {
            read.cancel(true);
            return null;
        }
    }

    private static long requestMillis() {
        try {
            return Files.getLastModifiedTime(dumpDir.resolve(FlightRecorderDump.REQUEST_FILE)).toMillis();
        } catch (IOException e) {
            return 0; // no request
        }
    }

    // ---------------------------------------------------------------------------------------------
    // Dumps.

    /** Called by a Work whose collective failed or timed out: writes this rank's dump, unless one was just written. */
    static void onFailure(DistributedException e) {
        synchronized (LOCK) {
            if (inspector == null) {
                return;
            }
            long now = System.nanoTime();
            if (lastFailureDumpNanos != Long.MIN_VALUE && now - lastFailureDumpNanos < FAILURE_DUMP_QUIET_NANOS) {
                return;
            }
            lastFailureDumpNanos = now;
        }
        dump((e instanceof DistributedTimeoutException ? "a collective timed out: " : "a collective failed: ")
                + e.getMessage());
    }

    /** At JVM exit (e.g. the launcher stops this worker): a dump if a collective is still running, since nothing else will write one. */
    private static void onShutdown() {
        boolean waiting = false;
        synchronized (LOCK) {
            if (dumpedOnShutdown || lastFailureDumpNanos != Long.MIN_VALUE) {
                return;
            }
            for (Tracked t : GROUPS) {
                long[] rec = ProcessGroupNatives.flightRecord(t.handle, true);
                for (int i = FlightRecordLayout.HEADER; i + FIELDS <= rec.length; i += FIELDS) {
                    waiting |= rec[i + FlightRecordLayout.STATE] == FlightRecordLayout.STATE_STARTED;
                }
            }
            dumpedOnShutdown = waiting;
        }
        if (waiting) {
            dump("the process is exiting (e.g. stopped by its launcher) while a collective is still running");
        }
    }

    /**
     * Writes this rank's dump (its groups' records and every Java thread's stack) to
     * {@code DDP4J_DEBUG_DIR}, atomically, and says so on stderr. Never throws: a failed dump is
     * reported and the caller's own error goes on.
     *
     * @return the file written, or null
     */
    static Path dump(String trigger) {
        try {
            ObjectNode root = JSON.createObjectNode();
            Path file;
            int entries;
            synchronized (LOCK) {
                if (GROUPS.isEmpty()) {
                    return null;
                }
                NativeProcessGroup first = GROUPS.get(0).group;
                int rank = globalRank(first, first.rank());
                root.put("version", FlightRecorderDump.VERSION);
                root.put(FlightRecorderDump.JOB_FIELD, GROUPS.get(0).job); // the default group's
                root.put("rank", rank);
                root.put("world_size", first.size()); // the first group is the default one
                root.put("pid", ProcessHandle.current().pid());
                root.put("hostname", hostname());
                root.put("trigger", trigger);
                root.put("time_ns", System.currentTimeMillis() * 1_000_000L);
                ObjectNode config = root.putObject("pg_config");
                ObjectNode status = root.putObject("pg_status");
                ArrayNode list = root.putArray("entries");
                for (Tracked t : GROUPS) {
                    Map<Integer, Long> peers = readPeers(t, DUMP_STORE_WAIT);
                    addGroup(t, config, status, list, peers != null ? peers : t.peersLastStarted);
                }
                entries = list.size();
                file = FlightRecorderDump.file(dumpDir, rank);
            }
            addThreads(root);
            byte[] bytes = JSON.writerWithDefaultPrettyPrinter().writeValueAsBytes(root);
            Files.createDirectories(dumpDir);
            AtomicFiles.write(file, ch -> ch.write(ByteBuffer.wrap(bytes)));
            System.err.println("ddp4j: rank " + root.get("rank").asInt() + " wrote its flight record (" + entries
                    + " ops) to " + file + " (" + trigger.split("\n", 2)[0] + ")");
            System.err.flush();
            return file;
        } catch (IOException | RuntimeException e) {
            System.err.println("ddp4j: could not write the flight-recorder dump to " + dumpDir + ": " + e);
            return null;
        }
    }

    private static void addGroup(Tracked t, ObjectNode config, ObjectNode status, ArrayNode list,
            Map<Integer, Long> peers) {
        NativeProcessGroup g = t.group;
        long[] rec = ProcessGroupNatives.flightRecord(t.handle, false);
        ObjectNode c = config.putObject(t.pgId);
        c.put("backend", g.backend());
        c.put("rank", g.rank());
        c.put("size", g.size());
        ArrayNode ranks = c.putArray("ranks");
        g.ranks().forEach(ranks::add);
        c.put("timeout_ms", g.timeout().toMillis());
        c.put("capacity", rec[FlightRecordLayout.HEADER_CAPACITY]);
        long steadyNow = rec[FlightRecordLayout.HEADER_STEADY_NOW];
        long wallNow = rec[FlightRecordLayout.HEADER_WALL_NOW];
        long lastCompleted = 0;
        for (int i = FlightRecordLayout.HEADER; i + FIELDS <= rec.length; i += FIELDS) {
            list.add(entry(t, rec, i, steadyNow, wallNow));
            int kind = (int) rec[i + FlightRecordLayout.KIND];
            if (!FlightRecordLayout.isTransfer(kind) && rec[i + FlightRecordLayout.STATE] == FlightRecordLayout.STATE_COMPLETED) {
                lastCompleted = Math.max(lastCompleted, rec[i + FlightRecordLayout.SEQ]);
            }
        }
        ObjectNode s = status.putObject(t.pgId);
        s.put("last_started_collective", rec[FlightRecordLayout.HEADER_LAST_STARTED]);
        s.put("last_completed_collective", lastCompleted);
        ObjectNode p = s.putObject("peers_last_started");
        peers.forEach((r, v) -> p.put(Integer.toString(globalRank(g, r)), v));
    }

    private static ObjectNode entry(Tracked t, long[] rec, int i, long steadyNow, long wallNow) {
        ObjectNode e = JSON.createObjectNode();
        int kind = (int) rec[i + FlightRecordLayout.KIND];
        boolean p2p = FlightRecordLayout.isTransfer(kind);
        String op = name(KINDS, kind);
        e.put("record_id", rec[i + FlightRecordLayout.RECORD_ID]);
        e.put("pg_id", t.pgId);
        e.put("collective_seq_id", p2p ? 0 : rec[i + FlightRecordLayout.SEQ]);
        e.put("p2p_seq_id", p2p ? rec[i + FlightRecordLayout.SEQ] : 0);
        e.put("profiling_name", t.group.backend() + ":" + op);
        e.put("op", op);
        // The call without its number: "allReduce(AVG) of 29,045 float32 elements (DDP bucket 1 of 1)".
        e.put("description", p2p ? describe(rec, i) : ProcessGroupNatives.describeCollective(0, kind,
                (int) rec[i + FlightRecordLayout.ARG], (int) rec[i + FlightRecordLayout.DTYPE],
                rec[i + FlightRecordLayout.NUMEL], (int) rec[i + FlightRecordLayout.BUCKET],
                (int) rec[i + FlightRecordLayout.BUCKETS], (int) rec[i + FlightRecordLayout.PEER]));
        if (kind == FlightRecordLayout.KIND_ALL_REDUCE || kind == FlightRecordLayout.KIND_REDUCE
                || kind == FlightRecordLayout.KIND_REDUCE_SCATTER) {
            e.put("reduce_op", name(REDUCE_OPS, rec[i + FlightRecordLayout.ARG]));
        }
        if (kind == FlightRecordLayout.KIND_BROADCAST) {
            e.put("root", globalRank(t.group, (int) rec[i + FlightRecordLayout.ARG]));
        } else if (kind == FlightRecordLayout.KIND_REDUCE) {
            e.put("root", globalRank(t.group, (int) rec[i + FlightRecordLayout.PEER]));
        }
        if (p2p) {
            e.put("peer", globalRank(t.group, (int) rec[i + FlightRecordLayout.PEER]));
            e.put("tag", rec[i + FlightRecordLayout.ARG]);
        }
        String dtype = name(DTYPES, rec[i + FlightRecordLayout.DTYPE]);
        e.put("dtype", dtype);
        e.put("numel", rec[i + FlightRecordLayout.NUMEL]);
        e.putArray("input_sizes").addArray().add(rec[i + FlightRecordLayout.NUMEL]);
        e.putArray("input_dtypes").add(dtype);
        if (rec[i + FlightRecordLayout.BUCKET] >= 0) {
            e.put("ddp_bucket", rec[i + FlightRecordLayout.BUCKET]);
            e.put("ddp_buckets", rec[i + FlightRecordLayout.BUCKETS]);
        }
        e.put("is_p2p", p2p);
        e.put("transport", name(TRANSPORTS, rec[i + FlightRecordLayout.TRANSPORT]));
        e.put("state", name(STATES, rec[i + FlightRecordLayout.STATE]));
        e.put("time_created_ns", wall(rec[i + FlightRecordLayout.QUEUED_NS], steadyNow, wallNow));
        e.put("time_discovered_started_ns", wall(rec[i + FlightRecordLayout.STARTED_NS], steadyNow, wallNow));
        e.put("time_discovered_completed_ns", wall(rec[i + FlightRecordLayout.FINISHED_NS], steadyNow, wallNow));
        if (rec[i + FlightRecordLayout.FINISHED_NS] != 0 && rec[i + FlightRecordLayout.STARTED_NS] != 0) {
            e.put("duration_ms", (rec[i + FlightRecordLayout.FINISHED_NS] - rec[i + FlightRecordLayout.STARTED_NS]) / 1e6);
        }
        e.put("timeout_ms", t.group.timeout().toMillis());
        return e;
    }

    private static void addThreads(ObjectNode root) {
        ArrayNode threads = root.putArray("threads");
        for (Map.Entry<Thread, StackTraceElement[]> th : Thread.getAllStackTraces().entrySet()) {
            Thread thread = th.getKey();
            ObjectNode n = threads.addObject();
            n.put("name", thread.getName());
            n.put("id", thread.getId());
            n.put("state", thread.getState().name());
            n.put("daemon", thread.isDaemon());
            ArrayNode frames = n.putArray("frames");
            for (StackTraceElement f : th.getValue()) {
                frames.add(f.toString());
            }
            if (thread.getName().equals("main")) {
                String at = userFrame(th.getValue());
                if (at != null) {
                    root.put("main_thread_location", at);
                }
            }
        }
    }

    /**
     * The first frame outside the JDK and ddp4j's own library code ("ConvNetDemo.java:142"): where
     * the program called into ddp4j. The demos in org.ddp4j.examples count as programs.
     */
    private static String userFrame(StackTraceElement[] frames) {
        CodeSource ours = FlightRecorderMonitor.class.getProtectionDomain().getCodeSource();
        for (StackTraceElement f : frames) {
            String cls = f.getClassName();
            if (cls.startsWith("java.") || cls.startsWith("jdk.") || cls.startsWith("sun.")) {
                continue;
            }
            if (cls.startsWith("org.ddp4j.") && !cls.startsWith("org.ddp4j.examples.") && sameCodeSource(cls, ours)) {
                continue;
            }
            return f.getFileName() != null && f.getLineNumber() > 0 ? f.getFileName() + ":" + f.getLineNumber()
                    : f.toString();
        }
        return null;
    }

    private static boolean sameCodeSource(String cls, CodeSource ours) {
        try {
            Class<?> c = Class.forName(cls, false, FlightRecorderMonitor.class.getClassLoader());
            CodeSource theirs = c.getProtectionDomain().getCodeSource();
            return ours == null || theirs == null || ours.getLocation().equals(theirs.getLocation());
        } catch (ClassNotFoundException | LinkageError | SecurityException e) {
            return true;
        }
    }

    // ---------------------------------------------------------------------------------------------
    // Formatting.

    private static String describe(long[] rec, int i) {
        return ProcessGroupNatives.describeCollective(rec[i + FlightRecordLayout.SEQ],
                (int) rec[i + FlightRecordLayout.KIND], (int) rec[i + FlightRecordLayout.ARG],
                (int) rec[i + FlightRecordLayout.DTYPE], rec[i + FlightRecordLayout.NUMEL],
                (int) rec[i + FlightRecordLayout.BUCKET], (int) rec[i + FlightRecordLayout.BUCKETS],
                (int) rec[i + FlightRecordLayout.PEER]);
    }

    private static long wall(long steady, long steadyNow, long wallNow) {
        return steady == 0 ? 0 : wallNow - (steadyNow - steady);
    }

    /** "float32", "int64", "bfloat16", "float16": the records hold DType ordinals. */
    private static String[] dtypeNames() {
        DType[] all = DType.values();
        String[] names = new String[all.length];
        for (int i = 0; i < all.length; i++) {
            names[i] = all[i].name().toLowerCase(java.util.Locale.ROOT);
        }
        return names;
    }

    private static String name(String[] names, long ordinal) {
        return ordinal >= 0 && ordinal < names.length ? names[(int) ordinal] : "unknown(" + ordinal + ")";
    }

    private static int globalRank(NativeProcessGroup g, int groupRank) {
        List<Integer> ranks = g.ranks();
        return groupRank >= 0 && groupRank < ranks.size() ? ranks.get(groupRank) : groupRank;
    }

    /** "2 s", "2.5 s", "30 min". */
    static String seconds(long nanos) {
        double s = nanos / 1e9;
        if (s >= 120 && Math.abs(s / 60 - Math.rint(s / 60)) < 1e-9) {
            return (long) Math.rint(s / 60) + " min";
        }
        return (Math.abs(s - Math.rint(s)) < 0.05 ? Long.toString(Math.round(s)) : String.format("%.1f", s)) + " s";
    }

    private static String hostname() {
        try {
            return InetAddress.getLocalHost().getHostName();
        } catch (IOException e) {
            return "unknown";
        }
    }
}
