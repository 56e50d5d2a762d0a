package org.ddp4j.launch;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.List;
import org.ddp4j.cuda.DeviceAssignment;
import org.ddp4j.tensor.Threads;

/**
 * A worker main class for the launcher tests. {@code LaunchTestWorker MODE DIR}:
 * <ul>
 *   <li>{@code env}: prints the launcher's variables as {@code NAME=value} lines (and
 *       {@code threads=N}, its default intra-op threads), one line to stderr, and writes the same
 *       lines to {@code DIR/rank-<RANK>}; exits 0.
 *   <li>{@code fail-rank1}: RANK 1 waits until every other rank of the world wrote its pid file,
 *       then exits 3; the other ranks write {@code DIR/pid-<RANK>} and sleep 60 s.
 *   <li>{@code fail-rank1-once}: in attempt 0 ({@code DDP4J_RESTART_COUNT}) behaves as
 *       {@code fail-rank1}; in later attempts prints its attempt and exits 0.
 *   <li>{@code sleep}: writes {@code DIR/pid-<RANK>} and sleeps 60 s.
 *   <li>{@code fail-first-attempt}: RANK 1 exits 3 when DDP4J_RESTART_COUNT is 0; otherwise prints
 *       its attempt and exits 0.
 *   <li>{@code train STEPS}: joins the Gloo group (env://), writes {@code DIR/pid-<RANK>}, then
 *       all-reduces {@code rank + 1} STEPS times, 100 ms apart, exiting 1 on a wrong sum; prints
 *       {@code step N} every 20 steps and {@code trained} at the end. A peer that dies makes the
 *       all-reduce throw: the JVM exits 1, as a training rank would.
 *   <li>{@code train-fail STEPS}: as {@code train}, but RANK 1 exits 3 at step 20.
 *   <li>{@code stdin}: reads its stdin to the end and prints {@code stdin bytes=N}.
 *   <li>{@code own-failure-then-consequence}: rank 1 records a failure of its own in its error file
 *       and closes its group; rank 0's next all-reduce fails on it and rank 0 exits first.
 * </ul>
 */
public final class LaunchTestWorker {

    /** The variables {@code env} mode reports. */
    static final List<String> VARS = List.of("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK",
            "GROUP_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "DDP4J_AGENT_STORE", "DDP4J_RESTART_COUNT",
            "DDP4J_MAX_RESTARTS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "CUDA_VISIBLE_DEVICES");

    private LaunchTestWorker() {}

    /** Runs the mode named by {@code args[0]} with the directory {@code args[1]}. */
    public static void main(String[] args) throws Exception {
        String mode = args[0];
        Path dir = Path.of(args[1]);
        int rank = Integer.parseInt(System.getenv("RANK"));
        switch (mode) {
            case "env" -> {
                StringBuilder sb = new StringBuilder();
                for (String v : VARS) {
                    sb.append(v).append('=').append(System.getenv(v)).append('\n');
                }
                sb.append("prop=").append(System.getProperty("ddp4j.test.opt")).append('\n');
                sb.append("threads=").append(Threads.getNumThreads()).append('\n');
                if (System.getenv("CUDA_VISIBLE_DEVICES") != null) {
                    int localRank = Integer.parseInt(System.getenv("LOCAL_RANK"));
                    sb.append("gpu=").append(DeviceAssignment.physicalDevice(System.getenv(), localRank)).append('\n');
                }
                System.out.print(sb);
                System.out.flush();
                System.err.println("hello on stderr from rank " + rank);
                writeAtomically(dir.resolve("rank-" + rank), sb.toString());
            }
            case "fail-rank1", "fail-rank1-once" -> {
                int attempt = Integer.parseInt(System.getenv("DDP4J_RESTART_COUNT"));
                if (mode.equals("fail-rank1-once") && attempt > 0) {
                    System.out.println("attempt " + attempt + " ok");
                    return;
                }
                if (rank == 1) {
                    int world = Integer.parseInt(System.getenv("WORLD_SIZE"));
                    long deadline = System.nanoTime() + 20_000_000_000L;
                    for (int r = 0; r < world; r++) {
                        while (r != 1 && !Files.exists(dir.resolve("pid-" + r)) && System.nanoTime() < deadline) {
                            Thread.sleep(20);
                        }
                    }
                    System.err.println("rank 1 fails now");
                    System.exit(3);
                }
                writeAtomically(dir.resolve("pid-" + rank), Long.toString(ProcessHandle.current().pid()));
                System.out.println("rank " + rank + " sleeping");
                Thread.sleep(60_000);
                System.out.println("rank " + rank + " woke up: it should have been stopped");
            }
            case "sleep" -> {
                writeAtomically(dir.resolve("pid-" + rank), Long.toString(ProcessHandle.current().pid()));
                System.out.println("rank " + rank + " sleeping");
                Thread.sleep(60_000);
            }
            case "fail-first-attempt" -> {
                int attempt = Integer.parseInt(System.getenv("DDP4J_RESTART_COUNT"));
                if (attempt == 0 && rank == 1) {
                    System.exit(3);
                }
                System.out.println("attempt " + attempt + " ok");
            }
            case "stdin" -> System.out.println("stdin bytes=" + System.in.readAllBytes().length);
            case "train", "train-fail" -> train(Integer.parseInt(args[2]), mode.equals("train-fail"), dir, rank);
            case "own-failure-then-consequence" -> ownFailureThenConsequence(rank);
            default -> throw new IllegalArgumentException("unknown mode " + mode);
        }
    }

    /**
     * Rank 1 records a failure of its own (its error file), closes its group and lingers; rank 0's
     * next all-reduce then fails on the closed peer and its JVM exits first. The root cause is
     * rank 1's failure, though rank 0 exited first.
     */
    private static void ownFailureThenConsequence(int rank) throws Exception {
        org.ddp4j.distributed.ProcessGroup group = org.ddp4j.distributed.Distributed.initProcessGroup("gloo");
        try (org.ddp4j.tensor.Tensor t = org.ddp4j.tensor.Tensor.of(new float[] {1}, 1)) {
            org.ddp4j.distributed.Distributed.allReduce(t, org.ddp4j.distributed.ReduceOp.SUM);
            if (rank == 1) {
                org.ddp4j.distributed.ErrorFile.record(new IllegalStateException("rank 1's own failure"));
                org.ddp4j.distributed.Distributed.destroyProcessGroup();
                Thread.sleep(30_000);
                System.exit(3);
            }
            Thread.sleep(500);
            org.ddp4j.distributed.Distributed.allReduce(t, org.ddp4j.distributed.ReduceOp.SUM);
        }
        System.out.println("rank " + group.rank() + ": the all-reduce after the peer left succeeded");
    }

    private static void train(int steps, boolean rank1Fails, Path dir, int rank) throws Exception {
        org.ddp4j.distributed.ProcessGroup group = org.ddp4j.distributed.Distributed.initProcessGroup("gloo");
        int world = group.size();
        writeAtomically(dir.resolve("pid-" + rank), Long.toString(ProcessHandle.current().pid()));
        float expected = world * (world + 1) / 2f;
        for (int step = 1; step <= steps; step++) {
            if (rank1Fails && rank == 1 && step == 20) {
                System.err.println("rank 1 fails now");
                System.exit(3);
            }
            try (org.ddp4j.tensor.Tensor t = org.ddp4j.tensor.Tensor.of(new float[] {rank + 1}, 1)) {
                org.ddp4j.distributed.Distributed.allReduce(t, org.ddp4j.distributed.ReduceOp.SUM);
                float got = t.toFloatArray()[0];
                if (got != expected) {
                    System.err.println("wrong sum at step " + step + ": " + got + ", expected " + expected);
                    System.exit(1);
                }
            }
            if (step % 20 == 0) {
                System.out.println("step " + step);
            }
            Thread.sleep(100);
        }
        System.out.println("trained");
        org.ddp4j.distributed.Distributed.destroyProcessGroup();
    }

    private static void writeAtomically(Path file, String text) throws IOException {
        Path tmp = file.resolveSibling(file.getFileName() + ".tmp");
        Files.writeString(tmp, text, StandardCharsets.UTF_8);
        Files.move(tmp, file, StandardCopyOption.ATOMIC_MOVE);
    }
}
