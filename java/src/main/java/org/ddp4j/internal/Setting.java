package org.ddp4j.internal;

import java.time.Duration;
import java.util.Locale;
import java.util.Map;

/**
 * Every {@code DDP4J_*} environment variable, in one place: its name, its default and what it
 * does; docs/settings.md's table lists the same (a test compares them). Java code reads a
 * variable only through its constant here, so a bad value is reported the same way everywhere:
 * an {@link IllegalStateException} that names the variable, its value and what it accepts.
 * Variables marked "native" are read by the C++ library (the same names, the same meaning).
 */
public enum Setting {
    // Collectives and groups
    TIMEOUT_SECONDS("DDP4J_TIMEOUT_SECONDS", "1800",
            "default timeout of initProcessGroup, newGroup and every collective, in seconds (decimals allowed)"),
    SHM("DDP4J_SHM", "1", "0: ranks on one host talk through Gloo's TCP instead of shared memory"),
    SHM_HOST_ID("DDP4J_SHM_HOST_ID", "boot id, hostname, namespaces",
            "overrides this rank's host identity for the shared-memory decision (tests: pretend to be several hosts)"),
    GLOO_HOSTNAME("DDP4J_GLOO_HOSTNAME", "GLOO_SOCKET_IFNAME's address, else the route to MASTER_ADDR",
            "the address this rank binds and advertises to its Gloo peers"),
    GLOO_CHECK_COLLECTIVES("DDP4J_GLOO_CHECK_COLLECTIVES", "1",
            "0: no header exchange before a collective (ranks that call different collectives are then not named)"),
    GLOO_SMALL_ALLREDUCE_BYTES("DDP4J_GLOO_SMALL_ALLREDUCE_BYTES", "262144",
            "all-reduces up to this many bytes take Gloo's one-round path (2 to 8 ranks); 0 turns it off"),
    GLOO_SMALL_SYNC("DDP4J_GLOO_SMALL_SYNC", "1", "0: Gloo's network thread reads the one-round path's sockets instead of the waiting thread"),
    FLIGHT_RECORDER_ENTRIES("DDP4J_FLIGHT_RECORDER_ENTRIES", "2000",
            "collectives and transfers each process group keeps in its flight recorder; 0 turns it (and the stall warnings) off (native)"),
    STALL_WARNING_SECONDS("DDP4J_STALL_WARNING_SECONDS", "60",
            "a rank waiting this long (at least 1 s) in one collective prints one warning naming it and the ranks that"
                    + " have not started it"),
    DEBUG_DIR("DDP4J_DEBUG_DIR", "the working directory",
            "where each rank writes its flight-recorder dump, where touching ddp4j-dump-request asks for one, and where"
                    + " the launcher's Java workers write a JVM crash log (hs_err_pid<PID>.log)"),
    NCCL_LIBRARY("DDP4J_NCCL_LIBRARY", "libnccl.so.2", "the NCCL library to open (native)"),
    // DDP
    DDP_OVERLAP("DDP4J_DDP_OVERLAP", "1",
            "0: DistributedDataParallel all-reduces every bucket after backward instead of during it"),
    // Memory and kernels
    CPU_CACHE_LIMIT("DDP4J_CPU_CACHE_LIMIT", "a quarter of RAM",
            "bytes the CPU allocator keeps cached for reuse, K/M/G suffixes allowed (native)"),
    MEMORY_PER_RANK("DDP4J_MEMORY_PER_RANK", "MemAvailable when the process group started, over the host's ranks",
            "bytes a rank may plan for, K/M/G suffixes allowed: an optimizer or DistributedDataParallel whose parameters,"
                    + " gradients and state would not fit is refused with the numbers; 0 turns the check off"),
    CUDA_CACHE_LIMIT("DDP4J_CUDA_CACHE_LIMIT", "none", "bytes the CUDA caching allocator may keep (native)"),
    CONV_DIRECT("DDP4J_CONV_DIRECT", "1", "0 (or false, off, no): every convolution through im2col + GEMM, never the direct kernel (native)"),
    CPU_BF16_KERNEL("DDP4J_CPU_BF16_KERNEL", "auto",
            "autocast's bfloat16 GEMMs on CPU: avx512bf16 (vdpbf16ps), widen (round, then float32 GEMM), auto: avx512bf16"
                    + " where the CPU has it (native)"),
    LIBRARY_PATH("DDP4J_LIBRARY_PATH", "the jar's own", "a folder with libddp4j.so and libddp4j_cuda.so to load instead"),
    // The TCP store
    STORE_SECRET("DDP4J_STORE_SECRET", "~/.ddp4j/store-secret", "the shared secret every store client proves it knows"),
    STORE_SECRET_FILE("DDP4J_STORE_SECRET_FILE", "~/.ddp4j/store-secret", "a file holding that secret"),
    STORE_MAX_KEY_BYTES("DDP4J_STORE_MAX_KEY_BYTES", "64K", "the largest key the store accepts"),
    STORE_MAX_VALUE_BYTES("DDP4J_STORE_MAX_VALUE_BYTES", "16M", "the largest value the store accepts"),
    OBJECT_MAX_BYTES("DDP4J_OBJECT_MAX_BYTES", "64M",
            "the largest serialized object of allGatherObject, broadcastObjectList, gatherObject, scatterObjectList"),
    STORE_MAX_CONNECTIONS("DDP4J_STORE_MAX_CONNECTIONS", "1024", "connections the store serves at once"),
    STORE_BIND_ADDR("DDP4J_STORE_BIND_ADDR", "the master address",
            "the address the store listens on, e.g. 0.0.0.0 for every interface"),
    // The launcher and its workers
    JAVA_OPTS("DDP4J_JAVA_OPTS", "none", "JVM options for worker JVMs (launcher and spawn), e.g. -Xmx4g"),
    CLASSPATH("DDP4J_CLASSPATH", "none", "the workers' extra class path (the launcher's --classpath sets it)"),
    KEEPALIVE_INTERVAL("DDP4J_KEEPALIVE_INTERVAL", "1", "the default of --keepalive-interval, in seconds"),
    KEEPALIVE_TIMEOUT("DDP4J_KEEPALIVE_TIMEOUT", "20", "the default of --keepalive-timeout, in seconds"),
    PROGRESS("DDP4J_PROGRESS", "auto", "auto, 1 or 0: rank 0's progress bar (the launcher sets 1 or 0 for each worker)"),
    DEBUG("DDP4J_DEBUG", "unset", "set: the demos print the stack trace of an error, not only its message"),
    // Set by the launcher for its workers, not by users
    AGENT_STORE("DDP4J_AGENT_STORE", "unset", "set to 1 by the launcher: the store at MASTER_ADDR is the launcher's"),
    RESTART_COUNT("DDP4J_RESTART_COUNT", "0", "set by the launcher: which restart of the workers this is"),
    MAX_RESTARTS("DDP4J_MAX_RESTARTS", "0", "set by the launcher: its --max-restarts"),
    ERROR_FILE("DDP4J_ERROR_FILE", "unset",
            "set by the launcher, spawn and SparkDistributor: where the worker records its failure (ErrorFile)"),
    TEST_NEUTRAL_MESSAGES("DDP4J_TEST_NEUTRAL_MESSAGES", "unset",
            "tests only: 1 replaces every native distributed error's message by a placeholder"),
    // Set by SparkDistributor for its workers
    SPARK_PARTITION("DDP4J_SPARK_PARTITION", "unset",
            "set by SparkDistributor.runOnPartitions: the safetensors file of this rank's partition (PartitionDataset reads it)");

    private final String variable;
    private final String defaultValue;
    private final String description;

    Setting(String variable, String defaultValue, String description) {
        this.variable = variable;
        this.defaultValue = defaultValue;
        this.description = description;
    }

    /** The environment variable's name, e.g. {@code "DDP4J_SHM"}. */
    public String variable() {
        return variable;
    }

    /** The default in words, as docs/settings.md's table shows it (e.g. {@code "1800"}, {@code "none"}). */
    public String defaultValue() {
        return defaultValue;
    }

    /** What the variable does, in one sentence. */
    public String description() {
        return description;
    }

    /** Whether the native library reads this variable itself. */
    public boolean isNative() {
        return description.endsWith("(native)");
    }

    /**
     * The value in {@code env}, trimmed, or null when unset or blank.
     *
     * @param env the environment, e.g. {@code System.getenv()}
     */
    public String raw(Map<String, String> env) {
        String v = env.get(variable);
        return v == null || v.isBlank() ? null : v.trim();
    }

    /**
     * A switch: {@code 1}, {@code true}, {@code on} or {@code yes} is true; {@code 0}, {@code false},
     * {@code off} or {@code no} is false; unset is {@code unset}.
     *
     * @throws IllegalStateException naming the variable for any other value
     */
    public boolean flag(Map<String, String> env, boolean unset) {
        String v = raw(env);
        if (v == null) {
            return unset;
        }
        switch (v.toLowerCase(Locale.ROOT)) {
            case "1": case "true": case "on": case "yes":
                return true;
            case "0": case "false": case "off": case "no":
                return false;
            default:
                throw bad(v, "1 or 0 (true/false, on/off, yes/no)");
        }
    }

    /**
     * A byte count: a non-negative integer, optionally with a binary suffix K, M or G
     * ({@code 64M}; {@code 64MB} and {@code 64MiB} read the same); unset is {@code unset}.
     *
     * @throws IllegalStateException naming the variable when the value is not one
     */
    public long bytes(Map<String, String> env, long unset) {
        String v = raw(env);
        if (v == null) {
            return unset;
        }
        long n = parseByteCount(v);
        if (n < 0) {
            throw bad(v, "a number of bytes (a non-negative integer, optionally with K, M or G)");
        }
        return n;
    }

    /**
     * The byte count {@code text} writes, e.g. {@code 1048576}, {@code 64K}, {@code 16 M},
     * {@code 1GiB}, {@code 512b} (case and surrounding blanks ignored), or -1 when it is not a
     * non-negative count below 2^63. The one parser of sizes in settings; callers that need a
     * narrower range check it themselves.
     */
    public static long parseByteCount(String text) {
        String s = text.trim().toUpperCase(Locale.ROOT);
        if (s.endsWith("IB")) {
            s = s.substring(0, s.length() - 2);
        } else if (s.endsWith("B")) {
            s = s.substring(0, s.length() - 1);
        }
        long unit = s.endsWith("K") ? 1L << 10 : s.endsWith("M") ? 1L << 20 : s.endsWith("G") ? 1L << 30 : 1;
        if (unit != 1) {
            s = s.substring(0, s.length() - 1).trim();
        }
        try {
            long n = Long.parseLong(s);
            return n >= 0 && n <= Long.MAX_VALUE / unit ? n * unit : -1;
        } catch (NumberFormatException e) {
            return -1;
        }
    }

    /**
     * A positive number of seconds, decimals allowed; unset is {@code unset}.
     *
     * @throws IllegalStateException naming the variable when the value is not one
     */
    public Duration seconds(Map<String, String> env, Duration unset) {
        String v = raw(env);
        if (v == null) {
            return unset;
        }
        try {
            double s = Double.parseDouble(v);
            if (s > 0 && !Double.isInfinite(s)) {
                return Duration.ofMillis(Math.max(1, Math.round(s * 1000)));
            }
        } catch (NumberFormatException e) {
            // reported below
        }
        throw bad(v, "a positive number of seconds");
    }

    /** The error for a value this setting does not accept. */
    public IllegalStateException bad(String value, String accepted) {
        return new IllegalStateException(variable + "=\"" + value + "\" is not " + accepted + "; unset it for the"
                + " default (" + defaultValue + ")");
    }
}
