package org.ddp4j.multiprocessing;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Threads;
import org.ddp4j.distributed.Distributed;
import org.ddp4j.distributed.ReduceOp;

/** Entry points that SpawnTest runs in spawned worker JVMs; args[0] is always the test's folder. */
final class SpawnTestWorkers {
    SpawnTestWorkers() {}

    /** Joins a 2-rank gloo group through env:// (the parent set MASTER_ADDR/PORT), all-reduces index + 1, writes what it saw. */
    static void allReduceAndRecord(int index, String[] args) throws IOException {
        Distributed.initProcessGroup("gloo", "env://", 2, index);
        Tensor t = Tensor.of(new float[] {index + 1f, 10f * (index + 1)}, 2);
        Distributed.allReduce(t, ReduceOp.SUM);
        float[] sum = t.toFloatArray();
        Distributed.destroyProcessGroup();
        System.out.println("worker " + index + " done");
        String record = "index=" + index + " sum=" + sum[0] + "," + sum[1] + " local_rank=" + System.getenv("LOCAL_RANK")
                + " local_world_size=" + System.getenv("LOCAL_WORLD_SIZE") + " threads=" + Threads.getNumThreads()
                + " args=" + String.join("|", args);
        Files.writeString(Path.of(args[0], "worker-" + index + ".txt"), record, StandardCharsets.UTF_8);
    }

    /** Index 1 writes to stderr and exits with code 3; index 0 records its pid and sleeps (to be stopped). */
    static void exitThreeOnIndexOne(int index, String[] args) throws Exception {
        if (index == 1) {
            awaitPidOfIndexZero(args);
            System.err.println("worker 1: giving up on purpose");
            System.exit(3);
        }
        sleepAfterRecordingPid(index, args);
    }

    /** Index 1 kills itself with signal 9; index 0 records its pid and sleeps. */
    static void killNineOnIndexOne(int index, String[] args) throws Exception {
        if (index == 1) {
            awaitPidOfIndexZero(args);
            System.err.println("worker 1: about to kill -9 myself");
            new ProcessBuilder("kill", "-9", Long.toString(ProcessHandle.current().pid())).inheritIO().start().waitFor();
            Thread.sleep(60_000);
        }
        sleepAfterRecordingPid(index, args);
    }

    /** Index 1 throws; index 0 records its pid and sleeps. */
    static void throwOnIndexOne(int index, String[] args) throws Exception {
        if (index == 1) {
            awaitPidOfIndexZero(args);
            throw new IllegalStateException("bad input in worker 1");
        }
        sleepAfterRecordingPid(index, args);
    }

    /** {@link #allReduceAndRecord} through tcp://127.0.0.1:args[1] (for spawn without an environment). */
    static void allReduceAndRecordWithOwnPort(int index, String[] args) throws IOException {
        Distributed.initProcessGroup("gloo", "tcp://127.0.0.1:" + args[1], 2, index);
        Tensor t = Tensor.of(new float[] {index + 1f, 10f * (index + 1)}, 2);
        Distributed.allReduce(t, ReduceOp.SUM);
        float[] sum = t.toFloatArray();
        Distributed.destroyProcessGroup();
        Files.writeString(Path.of(args[0], "worker-" + index + ".txt"), "index=" + index + " sum=" + sum[0] + "," + sum[1]);
    }

    /** Waits (at most 60 s) until index 0 has recorded its pid, so the test can check that it was stopped. */
    private static void awaitPidOfIndexZero(String[] args) throws InterruptedException {
        long deadline = System.nanoTime() + 60_000_000_000L;
        while (!Files.exists(Path.of(args[0], "pid-0")) && System.nanoTime() < deadline) {
            Thread.sleep(20);
        }
    }

    /** Records this JVM's pid in args[0]/pid-INDEX and sleeps for two minutes (a test stops it long before). */
    static void sleepAfterRecordingPid(int index, String[] args) throws Exception {
        Path tmp = Path.of(args[0], "pid-" + index + ".tmp");
        Files.writeString(tmp, Long.toString(ProcessHandle.current().pid()));
        Files.move(tmp, Path.of(args[0], "pid-" + index)); // whole or absent
        Thread.sleep(120_000);
    }

    /** An instance method: spawn must refuse a reference to it. */
    void instanceTrain(int index, String[] args) {
        throw new AssertionError("never runs");
    }
}
