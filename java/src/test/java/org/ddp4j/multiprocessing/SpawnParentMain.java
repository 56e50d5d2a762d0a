package org.ddp4j.multiprocessing;

/**
 * A parent JVM for SpawnTest's kill -9 check: spawns 2 workers that record their pids in
 * args[0] and sleep, prints "spawned", and waits for them.
 */
public final class SpawnParentMain {
    private SpawnParentMain() {}

    public static void main(String[] args) {
        SpawnContext context = Spawn.of(SpawnTestWorkers::sleepAfterRecordingPid).nprocs(2).args(args[0]).start();
        System.out.println("spawned " + context.pids());
        context.join();
    }
}
