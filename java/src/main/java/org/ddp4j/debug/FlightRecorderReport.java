package org.ddp4j.debug;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.Callable;
import java.util.stream.Collectors;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * Reads the flight-recorder dumps of a job ({@link FlightRecorderDump}: one per rank, possibly
 * collected from several hosts) and says in one line where the ranks parted: the first collective
 * that some rank never reached, or that ranks called differently, e.g.
 * {@code collective #57 allReduce(AVG) of 29,045 float32 elements (DDP bucket 1 of 1): ranks 0, 2, 3
 * started it; rank 1 never did — its last completed is #56; its main thread is in ConvNetDemo.java:142}.
 * A rank without a dump (stopped or killed: it could not write one) is judged by the progress it
 * last published to the store, as its peers recorded it. Dumps of different jobs (their
 * {@code job_id}s differ) are refused with each job's files named; a file that is not a readable dump
 * is left out of the summary and named with why. {@code scripts/ddp4j-run} prints the same
 * after a failed job when dumps exist on its node. Plays the part of PyTorch's
 * {@code torch.distributed.flight_recorder} analyzer ({@code fr_trace}).
 *
 * <pre>java -cp ddp4j.jar org.ddp4j.debug.FlightRecorderReport [DUMP_OR_FOLDER...]</pre>
 */
@Command(
        name = "FlightRecorderReport",
        mixinStandardHelpOptions = true,
        versionProvider = org.ddp4j.internal.VersionProvider.class,
        description = {"Summarizes ddp4j flight-recorder dumps (ddp4j-flight-recorder-rank*.json): the first collective"
                + " on which the ranks disagree or which a rank never reached."},
        exitCodeListHeading = "%nExit codes:%n",
        exitCodeList = {"0:a summary was printed (files that are not readable dumps are named in it)",
            "1:no readable dump found, or the dumps come from different jobs", "2:invalid command line"})
public final class FlightRecorderReport implements Callable<Integer> {
    @Parameters(paramLabel = "DUMP_OR_FOLDER", arity = "0..*",
            description = "Dump files or folders holding them (default: $DDP4J_DEBUG_DIR, else the working directory).")
    private List<Path> inputs = new ArrayList<>();

    @Spec
    private CommandSpec spec;

    /** Runs the report and exits the JVM with its exit code. */
    public static void main(String[] args) {
        CommandLine cl = new CommandLine(new FlightRecorderReport());
        System.exit(cl.execute(args));
    }

    @Override
    public Integer call() {
        PrintWriter out = spec.commandLine().getOut();
        PrintWriter err = spec.commandLine().getErr();
        List<Path> files = new ArrayList<>();
        try {
            List<Path> roots = inputs.isEmpty() ? List.of(FlightRecorderDump.directory(System.getenv())) : inputs;
            for (Path p : roots) {
                if (Files.isDirectory(p)) {
                    files.addAll(FlightRecorderDump.find(p, 0));
                } else if (Files.isRegularFile(p)) {
                    files.add(p);
                } else {
                    err.println("FlightRecorderReport: " + p + " does not exist");
                    return 1;
                }
            }
            if (files.isEmpty()) {
                err.println("FlightRecorderReport: no ddp4j-flight-recorder-rank*.json in " + roots);
                return 1;
            }
            out.println(summarize(files));
            out.flush();
            return 0;
        } catch (IOException e) {
            err.println("FlightRecorderReport: " + e.getMessage());
            return 1;
        }
    }

    /**
     * The summary of some dumps of one job: a line naming the files' ranks and job, then one line per
     * process group saying where its ranks parted (or that they agree). A file that is not a readable
     * dump is left out and named, with why, on a line of its own at the end; dumps without a job id
     * (written by an older ddp4j) are summarized after a warning line that says their job is unknown.
     *
     * @throws IOException when no file is a readable dump (naming each file and why), or when the
     *     dumps come from different jobs (naming each job and its files): those cannot be compared
     */
    public static String summarize(List<Path> files) throws IOException {
        Map<Path, JsonNode> dumps = new LinkedHashMap<>();
        List<String> unreadable = new ArrayList<>();
        for (Path f : files) {
            try {
                dumps.put(f, FlightRecorderDump.read(f));
            } catch (IOException e) {
                unreadable.add(e.getMessage()); // names the file
            }
        }
        if (dumps.isEmpty()) {
            throw new IOException(unreadable.size() == 1 ? unreadable.get(0)
                    : "none of the " + unreadable.size() + " files is a flight-recorder dump: " + String.join("; ", unreadable));
        }
        Map<String, List<Path>> byJob = new LinkedHashMap<>(); // the null key: dumps without a job id
        dumps.forEach((f, d) -> byJob.computeIfAbsent(FlightRecorderDump.job(d), k -> new ArrayList<>()).add(f));
        if (byJob.size() > 1) {
            throw new IOException(mixedJobs(byJob, dumps, unreadable));
        }
        String job = byJob.keySet().iterator().next();
        Map<Integer, JsonNode> byRank = new TreeMap<>();
        for (JsonNode d : dumps.values()) {
            byRank.merge(d.get("rank").asInt(), d, (a, b) -> a.path("time_ns").asLong() >= b.path("time_ns").asLong() ? a : b);
        }
        StringBuilder s = new StringBuilder();
        if (job == null) {
            s.append("warning: the dumps carry no job id (written by a ddp4j older than job ids), so whether they all come"
                    + " from one job is not checked\n");
        }
        s.append("flight recorder: dumps of ").append(ranks(byRank.keySet()));
        if (job != null) {
            s.append(" of job ").append(job);
        }
        s.append(" (");
        s.append(byRank.values().stream().map(d -> "rank " + d.get("rank").asInt() + ": " + firstLine(d.path("trigger").asText()))
                .collect(Collectors.joining("; "))).append(")");
        TreeSet<String> pgs = new TreeSet<>((a, b) -> {
            try {
                return Integer.compare(Integer.parseInt(a), Integer.parseInt(b));
            } catch (NumberFormatException e) {
                return a.compareTo(b);
            }
        });
        for (JsonNode d : byRank.values()) {
            d.path("pg_config").fieldNames().forEachRemaining(pgs::add);
        }
        for (String pg : pgs) {
            s.append('\n').append(pgs.size() > 1 ? "process group " + pg + ": " : "").append(analyze(pg, byRank));
        }
        for (String u : unreadable) {
            s.append("\nleft out: ").append(u);
        }
        return s.toString();
    }

    /** Why dumps of several jobs are not summarized: each job with its ranks and files, then the unreadable files. */
    private static String mixedJobs(Map<String, List<Path>> byJob, Map<Path, JsonNode> dumps, List<String> unreadable) {
        List<String> jobs = new ArrayList<>();
        byJob.forEach((job, files) -> {
            TreeSet<Integer> rs = new TreeSet<>();
            files.forEach(f -> rs.add(dumps.get(f).get("rank").asInt()));
            jobs.add((job != null ? "job " + job : "an unknown job (no job id: written by a ddp4j older than job ids)") + " ("
                    + ranks(rs) + "): " + files.stream().map(Path::toString).collect(Collectors.joining(", ")));
        });
        return "the dumps come from " + byJob.size() + " different jobs, whose records cannot be compared: "
                + String.join("; ", jobs) + ". Pass the dumps of one job only (e.g. clear DDP4J_DEBUG_DIR, or give each"
                + " job a DDP4J_DEBUG_DIR of its own)"
                + (unreadable.isEmpty() ? "" : "; also not readable dumps: " + String.join("; ", unreadable));
    }

    /** What one process group's records say, in one line. */
    private static String analyze(String pg, Map<Integer, JsonNode> dumps) {
        // The group's members (default-group ranks) and each dump's collectives by number.
        TreeSet<Integer> members = new TreeSet<>();
        Map<Integer, Map<Long, JsonNode>> calls = new TreeMap<>();
        Map<Integer, Long> reported = new TreeMap<>(); // a rank's last started, as its peers read it from the store
        for (Map.Entry<Integer, JsonNode> d : dumps.entrySet()) {
            JsonNode config = d.getValue().path("pg_config").path(pg);
            if (config.isMissingNode()) {
                continue;
            }
            config.path("ranks").forEach(r -> members.add(r.asInt()));
            Map<Long, JsonNode> mine = new TreeMap<>();
            for (JsonNode e : d.getValue().path("entries")) {
                if (pg.equals(e.path("pg_id").asText()) && !e.path("is_p2p").asBoolean() && e.path("collective_seq_id").asLong() > 0) {
                    mine.put(e.get("collective_seq_id").asLong(), e);
                }
            }
            calls.put(d.getKey(), mine);
            Iterator<Map.Entry<String, JsonNode>> peers = d.getValue().path("pg_status").path(pg).path("peers_last_started").fields();
            while (peers.hasNext()) {
                Map.Entry<String, JsonNode> p = peers.next();
                reported.merge(Integer.parseInt(p.getKey()), p.getValue().asLong(), Math::max);
            }
        }
        List<Integer> missing = members.stream().filter(r -> !calls.containsKey(r)).collect(Collectors.toList());
        long lo = 1;
        long hi = 0;
        for (Map<Long, JsonNode> m : calls.values()) {
            if (!m.isEmpty()) {
                lo = Math.max(lo, ((TreeMap<Long, JsonNode>) m).firstKey()); // older numbers fell out of some ring
                hi = Math.max(hi, ((TreeMap<Long, JsonNode>) m).lastKey());
            }
        }
        for (long seq = lo; seq <= hi; seq++) {
            Map<Integer, JsonNode> present = new TreeMap<>();
            List<Integer> absent = new ArrayList<>();
            for (Map.Entry<Integer, Map<Long, JsonNode>> c : calls.entrySet()) {
                JsonNode e = c.getValue().get(seq);
                if (e != null) {
                    present.put(c.getKey(), e);
                } else {
                    absent.add(c.getKey());
                }
            }
            final long n = seq;
            // A collective that a rank completed had every rank in it (barrier, all-reduce, ...): a rank
            // without a dump reached it whatever it last reported.
            boolean completedSomewhere = present.values().stream().anyMatch(e -> e.path("state").asText().equals("completed"));
            List<Integer> unreached = completedSomewhere ? List.of()
                    : missing.stream().filter(r -> reported.getOrDefault(r, 0L) < n).collect(Collectors.toList());
            Map<String, List<Integer>> variants = new LinkedHashMap<>();
            present.forEach((r, e) -> variants.computeIfAbsent(e.path("description").asText(), k -> new ArrayList<>()).add(r));
            if (variants.size() > 1) {
                return disagreement(seq, variants, dumps);
            }
            if (present.isEmpty()) {
                continue;
            }
            String call = variants.keySet().iterator().next();
            if (!absent.isEmpty() || !unreached.isEmpty()) {
                return neverReached(seq, call, present, absent, unreached, reported, dumps, calls);
            }
            List<Integer> unfinished = present.entrySet().stream()
                    .filter(e -> !e.getValue().path("state").asText().equals("completed")).map(Map.Entry::getKey)
                    .collect(Collectors.toList());
            if (!unfinished.isEmpty()) {
                return "collective #" + seq + " " + call + ": " + byState(present)
                        + (missing.isEmpty() ? "" : "; " + ranks(missing) + " wrote no dump but reported starting it")
                        + " — every rank called it, so its data did not arrive: a network problem between the hosts, or"
                        + " a peer that stopped inside it";
            }
        }
        return hi == 0 ? "no collective recorded"
                : "the records agree: every rank that wrote a dump completed every collective up to #" + hi
                        + (missing.isEmpty() ? "" : "; " + ranks(missing) + " wrote no dump");
    }

    private static String disagreement(long seq, Map<String, List<Integer>> variants, Map<Integer, JsonNode> dumps) {
        List<String> parts = new ArrayList<>();
        List<String> where = new ArrayList<>();
        for (Map.Entry<String, List<Integer>> v : variants.entrySet()) {
            parts.add(ranks(v.getValue()) + " called " + v.getKey());
            for (int r : v.getValue()) {
                String at = dumps.get(r).path("main_thread_location").asText(null);
                if (at != null) {
                    where.add("rank " + r + " in " + at);
                }
            }
        }
        return "collective #" + seq + ": the ranks disagree: " + String.join("; ", parts)
                + ". Every rank must call the same collectives in the same order"
                + (where.isEmpty() ? "" : " (main threads: " + String.join(", ", where) + ")");
    }

    private static String neverReached(long seq, String call, Map<Integer, JsonNode> present, List<Integer> absent,
            List<Integer> unreached, Map<Integer, Long> reported, Map<Integer, JsonNode> dumps,
            Map<Integer, Map<Long, JsonNode>> calls) {
        List<String> never = new ArrayList<>();
        for (int r : absent) {
            JsonNode d = dumps.get(r);
            long lastCompleted = 0;
            for (Map.Entry<Long, JsonNode> e : calls.get(r).entrySet()) {
                if (e.getValue().path("state").asText().equals("completed")) {
                    lastCompleted = Math.max(lastCompleted, e.getKey());
                }
            }
            String at = d.path("main_thread_location").asText(null);
            never.add("rank " + r + " never did — its last completed is " + (lastCompleted > 0 ? "#" + lastCompleted : "none")
                    + (at != null ? "; its main thread is in " + at : ""));
        }
        // The last collective a rank without a dump is known to have joined: what it published, or
        // one its peers completed (which needs every rank).
        long completedByPeers = 0;
        for (Map<Long, JsonNode> c : calls.values()) {
            for (Map.Entry<Long, JsonNode> e : c.entrySet()) {
                if (e.getKey() < seq && e.getValue().path("state").asText().equals("completed")) {
                    completedByPeers = Math.max(completedByPeers, e.getKey());
                }
            }
        }
        for (int r : unreached) {
            long last = Math.max(reported.getOrDefault(r, 0L), completedByPeers);
            never.add("rank " + r + " is not known to have started it — it wrote no dump (a stopped, killed or hung process"
                    + " cannot write one); " + (last > 0 ? "the last collective it is known to have joined is #" + last
                            : "no collective of it is known"));
        }
        return "collective #" + seq + " " + call + ": " + byState(present) + "; " + String.join("; ", never);
    }

    /** "ranks 0, 2 started it; rank 3 completed it". */
    private static String byState(Map<Integer, JsonNode> present) {
        Map<String, List<Integer>> states = new TreeMap<>();
        present.forEach((r, e) -> states.computeIfAbsent(e.path("state").asText(), k -> new ArrayList<>()).add(r));
        return states.entrySet().stream()
                .map(e -> ranks(e.getValue()) + switch (e.getKey()) {
                    case "queued" -> " called it (queued)";
                    case "failed" -> " started it and failed";
                    default -> " " + e.getKey() + " it";
                })
                .collect(Collectors.joining("; "));
    }

    /** "rank 1", "ranks 0, 2, 3". */
    private static String ranks(Iterable<Integer> ranks) {
        List<String> names = new ArrayList<>();
        ranks.forEach(r -> names.add(Integer.toString(r)));
        return (names.size() == 1 ? "rank " : "ranks ") + String.join(", ", names);
    }

    private static String firstLine(String s) {
        int nl = s.indexOf('\n');
        String line = nl < 0 ? s : s.substring(0, nl);
        return line.length() > 200 ? line.substring(0, 200) + "..." : line;
    }
}
