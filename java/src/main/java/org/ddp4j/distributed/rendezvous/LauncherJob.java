package org.ddp4j.distributed.rendezvous;

import java.nio.charset.StandardCharsets;
import java.util.List;
import org.ddp4j.distributed.store.Store;

/**
 * What node 0's launcher tells a process that joins its store without having been started by a
 * launcher (no {@code DDP4J_AGENT_STORE}): which attempt is running, so that the process meets
 * the workers' claims (and a duplicated RANK is named), and the job's world size and where it
 * came from, so that a process started with another WORLD_SIZE is told so at once instead of
 * waiting for ranks that will never come. Stored at the store's root under {@link #KEY}.
 *
 * @param attempt the running attempt (the workers' {@code DDP4J_RESTART_COUNT}); their keys are
 *     under {@link #workerPrefix(String)} of it
 * @param worldSize the attempt's world size
 * @param layout how the launchers made that world size, e.g. "--nnodes 2, worker counts [2, 1]"
 * @param launcher who serves the store, e.g. "node 0's launcher, pid 12 on host a"
 */
public record LauncherJob(int attempt, int worldSize, String layout, String launcher) {
    /** The root key under which node 0's launcher publishes the running attempt. */
    public static final String KEY = "ddp4j/launcher/job";

    /** The key prefix of the workers of attempt (restart count) {@code restart}: null or empty means 0. */
    public static String workerPrefix(String restart) {
        return "ddp4j/worker/" + (restart == null || restart.isEmpty() ? "0" : restart);
    }

    /** Writes this record under {@link #KEY} of {@code root} (the store's root key space). */
    public void publish(Store root) {
        root.set(KEY, (attempt + "\n" + worldSize + "\n" + layout + "\n" + launcher).getBytes(StandardCharsets.UTF_8));
    }

    /** The record a launcher published in {@code root}, or null when no launcher serves this store. */
    static LauncherJob read(Store root) {
        if (!root.check(List.of(KEY))) {
            return null;
        }
        String[] f = new String(root.get(KEY), StandardCharsets.UTF_8).split("\n", 4);
        if (f.length < 4) {
            return null;
        }
        try {
            return new LauncherJob(Integer.parseInt(f[0]), Integer.parseInt(f[1]), f[2], f[3]);
        } catch (NumberFormatException e) {
            return null; // not a record of this version: behave as before
        }
    }
}
