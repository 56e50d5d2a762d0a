package org.ddp4j.distributed.rendezvous;

import java.net.URI;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.ddp4j.distributed.store.FileStore;
import org.ddp4j.distributed.store.PrefixStore;
import org.ddp4j.distributed.store.Store;
import org.ddp4j.distributed.store.TcpStore;
import org.ddp4j.distributed.DistributedException;
import org.ddp4j.distributed.StoreException;
import org.ddp4j.distributed.environment.ClusterEnvironment;
import org.ddp4j.internal.Setting;

/**
 * Turns an init method ({@code env://}, {@code tcp://host:port}, {@code file:///path}) plus the
 * environment into a store, a rank and a world size. Mirrors {@code torch.distributed.rendezvous}.
 */
public final class InitMethod {
    /** ddp4j's launcher as each kind of user runs it: from a checkout, from Maven's jars, as the launcher jar. */
    public static final String LAUNCHER = "scripts/ddp4j-run (in a ddp4j checkout), java -cp \"app.jar:libs/*\""
            + " org.ddp4j.launch.Launcher --nproc-per-node N my.Main, or java -jar ddp4j-VERSION-launcher.jar"
            + " --classpath app.jar --nproc-per-node N my.Main";

    public static final String LAUNCHER_HINT = "start the workers with ddp4j's torchrun, the launcher: " + LAUNCHER
            + "; or set MASTER_ADDR, MASTER_PORT, WORLD_SIZE and RANK yourself";

    /**
     * What a rendezvous produced. {@code store} is the one to hand to the process group; {@code owned} closes what was
     * opened; {@code localAddress} is this process's address as the store sees it (null for file://);
     * {@code worldSource} says where the world size came from ("from the environment variable WORLD_SIZE").
     */
    public record Membership(Store store, int rank, int worldSize, String masterAddr, AutoCloseable owned, String localAddress,
            String worldSource) {}

    private InitMethod() {}

    /**
     * @param worldSize the world size, or -1 to take it from the init method / environment
     * @param rank this rank, or -1 to take it from the init method / environment
     * @param processEnv the environment; a task of a SLURM job step gets its missing torch variables
     *     from SLURM's ({@link ClusterEnvironment#resolve})
     * @throws IllegalStateException if env:// lacks variables (all are named) or a variable is malformed
     * @throws IllegalArgumentException for an unsupported or malformed init method, or a rank outside the world
     * @throws DistributedException if the store cannot be opened (e.g. rank 0's port is in use)
     */
    public static Membership rendezvous(String initMethod, int worldSize, int rank, Duration timeout,
            Map<String, String> processEnv) {
        Map<String, String> env = ClusterEnvironment.resolve(processEnv); // srun's tasks: RANK etc. from SLURM
        String method = initMethod == null || initMethod.isBlank() ? "env://" : initMethod.trim();
        if (method.equals("env://") || method.equals("env:")) {
            return env(worldSize, rank, timeout, env, processEnv, worldSource(worldSize, null, processEnv, env));
        }
        URI uri;
        try {
            uri = new URI(method);
        } catch (URISyntaxException e) {
            throw new IllegalArgumentException("malformed init method \"" + method + "\": " + e.getMessage()
                    + "; use env://, tcp://host:port or file:///path");
        }
        String scheme = uri.getScheme() == null ? "" : uri.getScheme().toLowerCase();
        Map<String, String> query = query(uri.getRawQuery());
        switch (scheme) {
            case "tcp": {
                String host = uri.getHost();
                int port = uri.getPort();
                if (host == null || port <= 0 || port > 65535) {
                    throw new IllegalArgumentException("init method \"" + method + "\" needs a host and a port:"
                            + " tcp://host:port, e.g. tcp://10.0.0.1:29500");
                }
                if (host.startsWith("[") && host.endsWith("]")) {
                    host = host.substring(1, host.length() - 1);
                }
                int world = worldOrRank(worldSize, query.get("world_size"), "WORLD_SIZE", "worldSize", method, env);
                int r = worldOrRank(rank, query.get("rank"), "RANK", "rank", method, env);
                checkRank(r, world, origin(rank, query, "rank", "RANK", method, processEnv),
                        origin(worldSize, query, "world_size", "WORLD_SIZE", method, processEnv));
                return tcp(host, port, world, r, timeout, env, worldSource(worldSize, query.get("world_size"), processEnv, env));
            }
            case "file": {
                String path = uri.getPath();
                if (path == null || path.isEmpty()) {
                    throw new IllegalArgumentException("init method \"" + method + "\" needs a path: file:///path/to/file");
                }
                int world = worldOrRank(worldSize, query.get("world_size"), "WORLD_SIZE", "worldSize", method, env);
                int r = worldOrRank(rank, query.get("rank"), "RANK", "rank", method, env);
                checkRank(r, world, origin(rank, query, "rank", "RANK", method, processEnv),
                        origin(worldSize, query, "world_size", "WORLD_SIZE", method, processEnv));
                FileStore store = new FileStore(Path.of(path), timeout);
                return new Membership(store, r, world, null, store, null,
                        worldSource(worldSize, query.get("world_size"), processEnv, env));
            }
            default:
                throw new IllegalArgumentException("unsupported init method \"" + method
                        + "\": use env:// (MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK), tcp://host:port or file:///path");
        }
    }

    /** Where the world size came from, for messages: "from the environment variable WORLD_SIZE" and the like. */
    private static String worldSource(int given, String fromQuery, Map<String, String> processEnv, Map<String, String> env) {
        if (given >= 0) {
            return "from initProcessGroup's worldSize argument";
        }
        if (fromQuery != null) {
            return "from world_size in the init method";
        }
        String v = processEnv.get("WORLD_SIZE");
        if (v != null && !v.isBlank()) {
            return "1".equals(Setting.AGENT_STORE.raw(env)) ? "from WORLD_SIZE, set by the launcher"
                    : "from the environment variable WORLD_SIZE";
        }
        String slurm = ClusterEnvironment.origin(processEnv, "WORLD_SIZE"); // e.g. SLURM_NTASKS=4
        return slurm == null ? "from the environment" : "from " + slurm + ", the SLURM job step's task count";
    }

    private static Membership env(int worldSize, int rank, Duration timeout, Map<String, String> env,
            Map<String, String> processEnv, String worldSource) {
        List<String> missing = new ArrayList<>();
        for (String name : List.of("MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK")) {
            boolean given = (name.equals("WORLD_SIZE") && worldSize >= 0) || (name.equals("RANK") && rank >= 0);
            String value = env.get(name);
            if (!given && (value == null || value.isBlank())) {
                missing.add(name);
            }
        }
        if (!missing.isEmpty()) {
            String which = missing.size() == 4 ? "none of them is set"
                    : String.join(", ", missing) + (missing.size() == 1 ? " is" : " are") + " not set";
            throw new IllegalStateException("env:// initialization needs the environment variables MASTER_ADDR,"
                    + " MASTER_PORT, WORLD_SIZE and RANK, but " + which + " (this process was not started by the"
                    + " launcher): " + LAUNCHER_HINT + ClusterEnvironment.missingHint(env));
        }
        String addr = env.get("MASTER_ADDR").trim();
        int port = parseEnvInt(env, "MASTER_PORT", 1, 65535);
        int world = worldSize >= 0 ? worldSize : parseEnvInt(env, "WORLD_SIZE", 1, Integer.MAX_VALUE);
        int r = rank >= 0 ? rank : parseEnvInt(env, "RANK", 0, Integer.MAX_VALUE);
        checkRank(r, world, rank >= 0 ? null : ClusterEnvironment.origin(processEnv, "RANK"),
                worldSize >= 0 ? null : ClusterEnvironment.origin(processEnv, "WORLD_SIZE"));
        return tcp(addr, port, world, r, timeout, env, worldSource);
    }

    /** A TcpStore at host:port: the launcher's (DDP4J_AGENT_STORE=1), or hosted by rank 0. */
    private static Membership tcp(String host, int port, int world, int rank, Duration timeout, Map<String, String> env,
            String worldSource) {
        if ("1".equals(Setting.AGENT_STORE.raw(env)) && isLaunchersStore(host, port, env)) {
            // The launcher hosts the store; each restart of the workers uses a fresh namespace.
            TcpStore client = TcpStore.client(host, port, timeout);
            return new Membership(new PrefixStore(LauncherJob.workerPrefix(Setting.RESTART_COUNT.raw(env)), client), rank,
                    world, host, client, client.localAddress(), worldSource);
        }
        // Rank 0 listens on the master address only (see StoreBindAddress for the exceptions).
        TcpStore store;
        try {
            store = rank == 0 ? TcpStore.server(host, port, timeout) : TcpStore.client(host, port, timeout);
        } catch (DistributedException e) {
            throw rank == 0 && e instanceof StoreException s && s.portInUse()
                    ? secondRankZero(host, port, world, worldSource, e) : e;
        }
        if (rank != 0) {
            try {
                LauncherJob job = LauncherJob.read(store);
                if (job != null) {
                    // A process started without the launcher, joining a launcher's job: meet its workers' claims.
                    checkLaunchersWorld(job, host, port, world, rank, worldSource, store.localAddress());
                    return new Membership(new PrefixStore(LauncherJob.workerPrefix(Integer.toString(job.attempt())), store),
                            rank, world, host, store, store.localAddress(), worldSource);
                }
            } catch (RuntimeException e) {
                store.close();
                throw e;
            }
        }
        return new Membership(store, rank, world, host, store, store.localAddress(), worldSource);
    }

    /**
     * Fails a process started without the launcher whose world size is not that of the launcher's job it joins.
     *
     * @throws DistributedException "WORLD_SIZE mismatch: rank 1 (pid ...) started with WORLD_SIZE=3 (from the
     *     environment variable WORLD_SIZE), but the store at H:P serves a job of ddp4j-run (...) whose world size is 2 ..."
     */
    private static void checkLaunchersWorld(LauncherJob job, String host, int port, int world, int rank,
            String worldSource, String localAddress) {
        if (job.worldSize() != world) {
            throw new DistributedException("WORLD_SIZE mismatch: rank " + rank + " (" + ProcessIdentity.current(localAddress)
                    .description() + ") started with WORLD_SIZE=" + world + " (" + worldSource + "), but the store at "
                    + host + ":" + port + " serves a job of the launcher (" + job.launcher() + ") whose world size is "
                    + job.worldSize() + " (the launcher's ranks: " + job.layout() + "); start every process of the job"
                    + " with the same WORLD_SIZE, or let the launcher start them all (it sets WORLD_SIZE and RANK)");
        }
    }

    /**
     * Rank 0 could not listen on the master port. If a store of this job already serves it and
     * holds a rank 0 claim, this process is a second RANK 0: say so, naming both claims.
     */
    private static DistributedException secondRankZero(String host, int port, int world, String worldSource,
            DistributedException portInUse) {
        try (TcpStore other = TcpStore.client(host, port, Duration.ofSeconds(2))) {
            LauncherJob job = LauncherJob.read(other);
            if (job != null) {
                // The launcher serves this store: its worker rank 0 holds the claim, not the store's host.
                try {
                    checkLaunchersWorld(job, host, port, world, 0, worldSource, other.localAddress());
                } catch (DistributedException mismatch) {
                    mismatch.addSuppressed(portInUse);
                    return mismatch;
                }
                ProcessIdentity holder = InitKeySpace.holder(
                        new PrefixStore(LauncherJob.workerPrefix(Integer.toString(job.attempt())), other), 0);
                if (holder != null) {
                    return new DistributedException(InitKeySpace.claimedTwice(0, world, holder.description(),
                            ProcessIdentity.current(other.localAddress()).description()), portInUse);
                }
                return portInUse;
            }
            long init = other.add(InitKeySpace.countKey(0), 0);
            String key = InitKeySpace.claimKey(init, 0);
            if (init > 0 && other.check(List.of(key))) {
                ProcessIdentity first = ProcessIdentity.decode(new String(other.get(key), StandardCharsets.UTF_8));
                ProcessIdentity me = ProcessIdentity.current(other.localAddress());
                String msg = "RANK 0 was claimed twice: by " + first.description() + ", which hosts the store at " + host
                        + ":" + port + ", and by " + me.description() + "; give each process its own RANK, or start them"
                        + " with the launcher (scripts/ddp4j-run or org.ddp4j.launch.Launcher), which assigns the ranks";
                if (!other.check(List.of(InitKeySpace.doneKey(init, 0)))) {
                    other.compareSet(InitKeySpace.conflictKey(init), new byte[0], msg.getBytes(StandardCharsets.UTF_8));
                }
                return new DistributedException(msg, portInUse);
            }
        } catch (RuntimeException probeFailed) {
            portInUse.addSuppressed(probeFailed); // not a store of ours (or not reachable): the port is simply taken
        }
        return portInUse;
    }

    private static boolean isLaunchersStore(String host, int port, Map<String, String> env) {
        String masterPort = trim(env.get("MASTER_PORT"));
        String masterAddr = trim(env.get("MASTER_ADDR"));
        return masterPort == null || masterAddr == null
                || (masterPort.equals(Integer.toString(port)) && masterAddr.equalsIgnoreCase(host));
    }

    private static int worldOrRank(int given, String fromQuery, String envName, String argName, String method,
            Map<String, String> env) {
        if (given >= 0) {
            return given;
        }
        if (fromQuery != null) {
            try {
                return Integer.parseInt(fromQuery);
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("init method \"" + method + "\": " + argName + " \"" + fromQuery
                        + "\" is not a number");
            }
        }
        if (env.get(envName) != null && !env.get(envName).isBlank()) {
            return parseEnvInt(env, envName, envName.equals("RANK") ? 0 : 1, Integer.MAX_VALUE);
        }
        throw new IllegalArgumentException("init method \"" + method + "\" needs the " + argName + ": pass it to"
                + " initProcessGroup, add ?rank=R&world_size=N to the URL, or set " + envName);
    }

    private static int parseEnvInt(Map<String, String> env, String name, int min, int max) {
        String raw = env.get(name).trim();
        try {
            int v = Integer.parseInt(raw);
            if (v < min || v > max) {
                throw new NumberFormatException();
            }
            return v;
        } catch (NumberFormatException e) {
            throw new IllegalStateException(name + "=\"" + raw + "\" is not " + (name.equals("MASTER_PORT")
                    ? "a port number (1..65535)" : "a number >= " + min) + ": " + LAUNCHER_HINT);
        }
    }

    /**
     * Where a rank or world size that was not passed to initProcessGroup came from: the init method's query
     * ({@code "rank=5 in tcp://..."}), else the environment ({@link ClusterEnvironment#origin}); null when passed.
     */
    private static String origin(int given, Map<String, String> query, String queryKey, String envName, String method,
            Map<String, String> processEnv) {
        if (given >= 0) {
            return null;
        }
        return query.get(queryKey) != null ? queryKey + "=" + query.get(queryKey) + " in " + method
                : ClusterEnvironment.origin(processEnv, envName);
    }

    /**
     * @param rankFrom where the rank came from (e.g. "SLURM_PROCID=5", "RANK=5"), null when it was passed as an argument
     * @param worldFrom where the world size came from, likewise
     */
    private static void checkRank(int rank, int world, String rankFrom, String worldFrom) {
        if (world < 1) {
            throw new IllegalArgumentException("world size must be at least 1, got " + world);
        }
        if (rank >= 0 && rank < world) {
            return;
        }
        String msg = "rank " + rank + " is not in [0, " + world + ") (world size " + world + ")";
        if (rankFrom != null || worldFrom != null) {
            msg += ": the rank came from " + (rankFrom == null ? "initProcessGroup's rank argument" : rankFrom)
                    + " and the world size from " + (worldFrom == null ? "initProcessGroup's worldSize argument" : worldFrom);
        }
        boolean rankFromSlurm = rankFrom != null && rankFrom.startsWith("SLURM_");
        boolean worldFromSlurm = worldFrom != null && worldFrom.startsWith("SLURM_");
        if (rankFromSlurm && worldFromSlurm) {
            msg += "; srun numbers the tasks of a job step 0 to its task count - 1, so these two were not set by one"
                    + " srun (set or exported by hand, or left from another step?): start each task with srun, which"
                    + " sets both, or set RANK and WORLD_SIZE yourself";
        } else if (rankFromSlurm) {
            msg += "; srun numbers the tasks of this step by SLURM_PROCID, so the world size must be the step's task"
                    + " count: start srun with -n " + world + ", or take the world size from SLURM too (leave WORLD_SIZE"
                    + " unset and pass -1)";
        } else if (worldFromSlurm) {
            msg += "; the rank must be below the step's task count: take it from SLURM too (leave RANK unset and pass"
                    + " -1: srun numbers its tasks 0 to " + (world - 1) + "), or set WORLD_SIZE yourself";
        }
        throw new IllegalArgumentException(msg);
    }

    private static Map<String, String> query(String raw) {
        Map<String, String> out = new LinkedHashMap<>();
        if (raw == null || raw.isEmpty()) {
            return out;
        }
        for (String part : raw.split("&")) {
            int eq = part.indexOf('=');
            if (eq > 0) {
                out.put(part.substring(0, eq), part.substring(eq + 1));
            }
        }
        return out;
    }

    private static String trim(String s) {
        return s == null ? null : s.trim();
    }
}
