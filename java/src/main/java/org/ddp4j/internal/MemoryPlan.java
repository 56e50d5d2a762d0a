package org.ddp4j.internal;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;
import java.util.Map;
import java.util.function.Supplier;

/**
 * What a rank may hold in host memory, checked before training allocates it, so that a model too
 * large for the machine fails with its numbers and the fix instead of the kernel's out-of-memory
 * killer. The budget of a rank is {@code DDP4J_MEMORY_PER_RANK} when set (0: no check), else
 * {@code MemAvailable} when this process started its default group (Distributed.initProcessGroup
 * records it, before the model exists) over {@code LOCAL_WORLD_SIZE} ranks on the host. Without
 * either (no default group, e.g. ranks as threads of a test) nothing is checked.
 *
 * <p>A plan counts what is known before the first step: parameters, their gradients, the
 * optimizer's state, and {@link #RUNTIME_BYTES} for the JVM and the native runtime. Activations
 * come on top (they depend on the batch), so passing the check is no promise; failing it means the
 * job cannot fit. Callers count host memory only (tensors on a GPU are not planned here).
 */
public final class MemoryPlan {
    /** The JVM, the native runtime and their caches, before any tensor: 0.5 GiB. */
    public static final long RUNTIME_BYTES = 512L << 20;

    private static volatile long availableAtStart = -1;
    private static final ThreadLocal<Integer> suspended = ThreadLocal.withInitial(() -> 0);

    private MemoryPlan() {}

    /** Records MemAvailable now, once per process (called when the default group starts). */
    public static void recordAvailableAtStart() {
        if (availableAtStart < 0) {
            availableAtStart = memAvailable();
        }
    }

    /** MemAvailable from /proc/meminfo in bytes, or -1 where there is none. */
    static long memAvailable() {
        try {
            for (String line : Files.readAllLines(Path.of("/proc/meminfo"))) {
                if (line.startsWith("MemAvailable:")) {
                    return Long.parseLong(line.replaceAll("[^0-9]", "")) * 1024;
                }
            }
        } catch (IOException | NumberFormatException e) {
            return -1;
        }
        return -1;
    }

    /** What one rank may plan for, and where that figure comes from. */
    public record Budget(long bytes, String source) {}

    /**
     * This rank's budget under {@code env}, or null when nothing is to be checked.
     *
     * @throws IllegalStateException when DDP4J_MEMORY_PER_RANK or LOCAL_WORLD_SIZE is not a valid value
     */
    public static Budget budget(Map<String, String> env) {
        long set = Setting.MEMORY_PER_RANK.bytes(env, -1);
        if (set == 0) {
            return null;
        }
        if (set > 0) {
            return new Budget(set, "DDP4J_MEMORY_PER_RANK=" + env.get(Setting.MEMORY_PER_RANK.variable()));
        }
        if (availableAtStart <= 0) {
            return null;
        }
        int ranks;
        try {
            ranks = Integer.parseInt(env.getOrDefault("LOCAL_WORLD_SIZE", "1").trim());
        } catch (NumberFormatException e) {
            throw new IllegalStateException("LOCAL_WORLD_SIZE must be a positive integer, got '"
                    + env.get("LOCAL_WORLD_SIZE") + "'");
        }
        if (ranks <= 0) {
            throw new IllegalStateException("LOCAL_WORLD_SIZE must be a positive integer, got " + ranks);
        }
        return new Budget(availableAtStart / ranks, "MemAvailable " + gib(availableAtStart)
                + " when the process group started, over " + ranks + (ranks == 1 ? " rank" : " ranks") + " on this host");
    }

    /**
     * Throws when the parts exceed this rank's budget.
     *
     * @param who what allocates them, e.g. "AdamW"
     * @param parts each part's name and bytes, in order (the runtime's share is added)
     * @param fix what to do instead, e.g. "shard the optimizer state with ZeroRedundancyOptimizer"
     * @throws IllegalStateException "AdamW needs at least 12.4 GiB on each rank (parameters 2.9 GiB, ...)
     *     but a rank may use 10.2 GiB here (MemAvailable ...): FIX; DDP4J_MEMORY_PER_RANK sets the
     *     budget (0: no check)"
     */
    public static void check(String who, Map<String, Long> parts, Supplier<String> fix) {
        if (suspended.get() > 0) {
            return;
        }
        Budget budget = budget(System.getenv());
        check(who, parts, fix, budget);
    }

    static void check(String who, Map<String, Long> parts, Supplier<String> fix, Budget budget) {
        if (budget == null) {
            return;
        }
        long need = RUNTIME_BYTES;
        StringBuilder list = new StringBuilder();
        for (Map.Entry<String, Long> part : parts.entrySet()) {
            need += part.getValue();
            list.append(part.getKey()).append(' ').append(gib(part.getValue())).append(", ");
        }
        list.append(gib(RUNTIME_BYTES)).append(" for the JVM and the native runtime; activations come on top");
        if (need > budget.bytes()) {
            throw new IllegalStateException(who + " needs at least " + gib(need) + " on each rank (" + list
                    + ") but a rank may use " + gib(budget.bytes()) + " here (" + budget.source() + "): " + fix.get()
                    + "; DDP4J_MEMORY_PER_RANK sets the budget (0: no check)");
        }
    }

    /** Runs {@code body} without checks on this thread: a wrapper that makes optimizers it plans for itself. */
    public static <T> T unchecked(Supplier<T> body) {
        suspended.set(suspended.get() + 1);
        try {
            return body.get();
        } finally {
            suspended.set(suspended.get() - 1);
        }
    }

    /** Bytes as GiB with one decimal ("12.4 GiB"); below 1 GiB as MiB ("512.0 MiB"). */
    public static String gib(long bytes) {
        return bytes < (1L << 30) ? String.format(Locale.ROOT, "%.1f MiB", bytes / (double) (1L << 20))
                : String.format(Locale.ROOT, "%.1f GiB", bytes / (double) (1L << 30));
    }
}
