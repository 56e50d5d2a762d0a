package org.ddp4j.distributed;

import java.time.Duration;
import java.util.Locale;
import java.util.Map;
import org.ddp4j.cuda.Cuda;
import org.ddp4j.distributed.environment.ClusterEnvironment;
import org.ddp4j.distributed.rendezvous.InitKeySpace;
import org.ddp4j.distributed.rendezvous.InitMethod;
import org.ddp4j.distributed.rendezvous.ProcessIdentity;
import org.ddp4j.distributed.store.Store;
import org.ddp4j.tensor.Device;
import org.ddp4j.internal.Setting;

/**
 * A default group and the subgroups that may be made from it, and how one is made: the backend
 * and its device, the timeout, the init method's rendezvous, the key space of this init, then the
 * group. {@link Distributed#initProcessGroup} keeps the world it makes.
 */
record World(ProcessGroup group, Subgroups subgroups) {

    static World create(String backend, String initMethod, int worldSize, int rank, Duration timeout,
            Map<String, String> env) {
        boolean nccl = checkBackend(backend);
        // The GPU first: without one, "nccl" fails here, before any rendezvous waits for peers.
        Device device = nccl ? ncclDevice(ClusterEnvironment.resolve(env)) : Device.CPU; // srun: SLURM_LOCALID
        Duration t = timeout != null ? timeout : defaultTimeout(env);
        if (t.isNegative() || t.isZero()) {
            throw new IllegalArgumentException("timeout must be positive, got " + t);
        }
        InitMethod.Membership r = InitMethod.rendezvous(initMethod, worldSize, rank, t, env);
        try {
            Store store = InitKeySpace.enter(r.store(), r.rank(), r.worldSize(), r.worldSource(), t,
                    ProcessIdentity.current(r.localAddress()));
            ProcessGroup group;
            if (nccl) {
                group = new ProcessGroupNccl(store, r.rank(), r.worldSize(), t, device, r.owned());
            } else {
                GlooOptions options = GlooOptions.fromEnvironment(env);
                String hostname = ProcessGroupGloo.defaultHostname(r.masterAddr(), options);
                // A master name that is loopback only here (Debian's 127.0.1.1): agree with the peers on one that reaches them.
                hostname = GlooAdvertisedAddress.agree(store, r.rank(), r.worldSize(), r.masterAddr(), options, hostname);
                group = new ProcessGroupGloo(store, r.rank(), r.worldSize(), t, hostname, r.owned(), options);
            }
            return new World(group, new Subgroups(group, store, r.masterAddr(), env));
        } catch (RuntimeException e) {
            try {
                r.owned().close();
            } catch (Exception suppressed) {
                e.addSuppressed(suppressed);
            }
            throw e;
        }
    }

    /** Whether the backend is nccl (else gloo). */
    static boolean checkBackend(String backend) {
        String b = backend == null ? "gloo" : backend.trim().toLowerCase(Locale.ROOT);
        if (b.equals("gloo")) {
            return false;
        }
        if (b.equals("nccl")) {
            return true;
        }
        throw new IllegalArgumentException("unknown backend \"" + backend + "\": ddp4j's backends are gloo (CPU) and"
                + " nccl (CUDA)" + (b.contains(":") ? "; \"" + backend + "\" looks like an init method: use"
                + " initProcessGroup(\"gloo\", \"" + backend + "\", -1, -1)" : ""));
    }

    /**
     * This process's GPU for the nccl backend: cuda:LOCAL_RANK ({@link Cuda#localDevice}).
     *
     * @throws IllegalStateException "nccl backend: no CUDA device usable by this process (...)" on a
     *     machine without a GPU, or with a build without the CUDA library
     */
    static Device ncclDevice(Map<String, String> env) {
        try {
            return Cuda.localDevice(env);
        } catch (IllegalStateException | UnsatisfiedLinkError e) {
            throw new IllegalStateException("nccl backend: no CUDA device usable by this process (" + e.getMessage()
                    + "); use the gloo backend (CPU tensors) on machines without a GPU", e);
        }
    }

    /** 30 minutes, or DDP4J_TIMEOUT_SECONDS (a positive number of seconds) when set. */
    static Duration defaultTimeout(Map<String, String> env) {
        return Setting.TIMEOUT_SECONDS.seconds(env, Distributed.DEFAULT_TIMEOUT);
    }
}
