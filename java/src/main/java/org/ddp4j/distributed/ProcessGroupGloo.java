package org.ddp4j.distributed;

import java.io.IOException;
import java.net.DatagramSocket;
import java.net.Inet4Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.NetworkInterface;
import java.net.ServerSocket;
import java.net.SocketException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Objects;
import org.ddp4j.distributed.store.HashStore;
import org.ddp4j.distributed.store.PrefixStore;
import org.ddp4j.distributed.store.Store;
import org.ddp4j.distributed.store.TcpStore;
import org.ddp4j.internal.GlooGroupOptions;
import org.ddp4j.internal.GlooNatives;
import org.ddp4j.internal.NativeStore;
import org.ddp4j.tensor.Tensor;

/**
 * The CPU backend: collectives over Gloo's TCP transport. Mirrors
 * {@code torch.distributed.ProcessGroupGloo}.
 *
 * <p>The constructor is the rendezvous: each rank sets {@code ddp4j/joined/<rank>} in the store,
 * waits for every rank, then exchanges connection addresses (under {@code ddp4j/gloo/}) and
 * connects to every peer. The store is not used after that. One store should host one group at a
 * time; to run several, give each a {@link PrefixStore}.
 *
 * <p>Collectives run on one worker thread per group, in issue order, each bounded by the group's
 * timeout. Every collective carries a 40-byte fingerprint (the group's collective number, op,
 * dtype, element count, root, DDP bucket) so that ranks that call different collectives fail
 * cleanly, each with a {@link DistributedException} naming its own call and a peer's, e.g.
 * "allReduce(SUM) of 1 float32 element (#57) on rank 1: a peer called a different collective:
 * rank 0 called allReduce(AVG) of 1,234 float32 elements (#57, DDP bucket 2 of 3). ...". Where
 * ddp4j moves the data itself (shared memory, the small all-reduce below) the fingerprint rides
 * with the data at no cost; before Gloo's own ring, broadcast and all-gather the ranks exchange
 * it in one small message each way, since Gloo aborts the process when ranks pass different
 * sizes. Setting the environment variable {@code DDP4J_GLOO_CHECK_COLLECTIVES=0} skips that
 * exchange (only for programs known to be correct). After a network error or a timeout the group
 * is unusable: later collectives fail at once; close it and create a new one.
 *
 * <p>All-reduces of up to 256 KiB in groups of 2 to 8 ranks skip Gloo's ring: each rank sends its
 * tensor to every peer in one message over a second set of connections and reduces the blocks in
 * rank order (the same values on every rank; at 2 ranks identical to the ring's). That is one
 * message instead of 2(n-1) rendezvous rounds, read by the waiting thread itself; the measured
 * latencies are in benchmarks/RESULTS.md. {@code DDP4J_GLOO_SMALL_ALLREDUCE_BYTES=0} turns it off.
 * Every Gloo environment variable is read by {@link GlooOptions}.
 *
 * <p>Ranks that share a host (same boot id, hostname, network and pid namespace) use shared memory
 * instead of TCP, decided by all ranks together at construction; {@link #transport()} says which
 * path the group took and {@code DDP4J_SHM=0} turns it off. A failure on the shared-memory path
 * (a dead peer, a timeout, ranks that disagree) makes the group unusable, like a network error.
 *
 * <p>Network address: the address this rank binds and advertises to its peers is, in order,
 * {@code DDP4J_GLOO_HOSTNAME}; the first IPv4 address of the interface named by
 * {@code GLOO_SOCKET_IFNAME}; 127.0.0.1 when the master address is a loopback address; the local
 * address of the route to the master; this host's resolved address if it can be bound; 127.0.0.1.
 * Through {@code initProcessGroup}, a master <em>name</em> that resolves to loopback only on its own host
 * (Debian's {@code /etc/hosts} line {@code 127.0.1.1 <hostname>}) is settled with the peers through the
 * store: a rank on that host advertises its address on the route to a rank on another host, or
 * 127.0.0.1 when every rank runs there.
 */
public final class ProcessGroupGloo extends NativeProcessGroup {
    /** PyTorch's default process-group timeout: 30 minutes. */
    public static final Duration DEFAULT_TIMEOUT = Duration.ofMinutes(30);

    private final String hostname;
    private final String transport;

    /**
     * Joins the group of {@code size} ranks that rendezvous through {@code store}, binding this
     * host's default address (see the class comment). Blocks until every rank has joined.
     *
     * @param store the rendezvous store, shared by all ranks (e.g. a {@link TcpStore}, or a
     *     {@link HashStore} for ranks that are threads of one JVM)
     * @param rank this rank, in {@code [0, size)}
     * @param size the number of ranks (the world size), at least 1
     * @param timeout how long to wait for the other ranks, and for each collective
     * @throws DistributedTimeoutException naming the ranks that did not join within {@code timeout}
     * @throws DistributedException if the store fails or the peers cannot be connected
     * @throws IllegalArgumentException for a rank outside {@code [0, size)} or a non-positive timeout
     */
    public ProcessGroupGloo(Store store, int rank, int size, Duration timeout) {
        this(store, rank, size, timeout, null, null, GlooOptions.fromEnvironment(System.getenv()));
    }

    /**
     * As {@link #ProcessGroupGloo(Store, int, int, Duration)}, binding {@code hostname}: an
     * address (or name) of this machine that the other ranks can reach, e.g. {@code "127.0.0.1"}
     * when all ranks run on this machine.
     */
    public ProcessGroupGloo(Store store, int rank, int size, Duration timeout, String hostname) {
        this(store, rank, size, timeout, Objects.requireNonNull(hostname, "hostname"), null,
                GlooOptions.fromEnvironment(System.getenv()));
    }

    /** The op of the native rendezvous's timeout: ranks that did not join (rendezvous.cpp). */
    static final String RENDEZVOUS = "rendezvous";

    /** Appended to a rendezvous timeout of a new job: the usual reason is a rank never started. */
    static final String NOT_STARTED_HINT = ": was every rank started? check MASTER_ADDR/MASTER_PORT, WORLD_SIZE and RANK";

    /**
     * {@code hostname} null picks the default for {@code masterAddr} null; {@code resources}
     * (stores that {@link Distributed} opened for this group) are closed with the group.
     */
    ProcessGroupGloo(Store store, int rank, int size, Duration timeout, String hostname, AutoCloseable resources,
            GlooOptions options) {
        super(store, rank, size, timeout, resources);
        this.hostname = hostname != null ? hostname : defaultHostname(null, options);
        try {
            setHandle(GlooNatives.create(new StoreForNative(store), new LostPeerRecords(store), rank, size,
                    new GlooGroupOptions(millis(timeout), this.hostname, options.socketIfname(),
                            options.checkCollectives(), options.smallAllReduceBytes(),
                            options.smallAllReduceSyncReads(), options.shm(), options.shmHostId())));
        } catch (DistributedTimeoutException e) {
            throw RENDEZVOUS.equals(e.op()) ? e.explained(null, NOT_STARTED_HINT) : e;
        }
        this.transport = GlooNatives.transport(handle("transport"));
    }

    /**
     * How this group moves data, decided once at construction by all ranks together:
     * <ul>
     *   <li>{@code "shm"}: every rank runs on this host; all collectives go through one shared-memory
     *       segment (small ones on the calling thread, in microseconds);
     *   <li>{@code "shm+gloo"}: several hosts, some with two or more ranks; all-reduce and broadcast
     *       are hierarchical (shared memory inside each host, Gloo among one leader per host),
     *       allGather and barrier use Gloo;
     *   <li>{@code "gloo"}: Gloo's TCP transport only (one rank per host, {@code DDP4J_SHM=0} on
     *       some rank, or a host where shared memory could not be set up).
     * </ul>
     */
    public String transport() {
        return transport;
    }

    /** {@code "gloo"}. */
    @Override
    public String backend() {
        return "gloo";
    }

    /** The address this rank bound and advertised to its peers. */
    public String hostname() {
        return hostname;
    }

    /** Gloo takes any tensor; the native side checks device, dtype and sizes. */
    @Override
    void checkTensor(String op, String what, Tensor t) {
        Objects.requireNonNull(t, what);
    }

    @Override
    public String toString() {
        return "ProcessGroupGloo(rank " + rank() + " of " + size() + ", " + hostname + ", " + transport + (isClosed() ? ", closed" : "") + ")";
    }

    /**
     * The address this rank binds and advertises (see the class comment for the order of choices).
     *
     * @param masterAddr MASTER_ADDR or the tcp:// host, or null when there is none (HashStore, file://)
     * @param options the Gloo settings: DDP4J_GLOO_HOSTNAME and GLOO_SOCKET_IFNAME
     * @throws IllegalStateException if GLOO_SOCKET_IFNAME names an interface without an address
     */
    static String defaultHostname(String masterAddr, GlooOptions options) {
        String explicit = options.hostname();
        if (explicit != null && !explicit.isBlank()) {
            return explicit.trim();
        }
        String iface = options.socketIfname();
        if (iface != null && !iface.isBlank()) {
            return interfaceAddress(iface.trim());
        }
        if (masterAddr != null && !masterAddr.isBlank()) {
            try {
                InetAddress master = InetAddress.getByName(masterAddr);
                if (master.isLoopbackAddress()) {
                    return master instanceof Inet4Address ? "127.0.0.1" : master.getHostAddress();
                }
                // The local end of the route to the master: connecting a UDP socket sends nothing.
                try (DatagramSocket probe = new DatagramSocket()) {
                    probe.connect(new InetSocketAddress(master, 9));
                    InetAddress local = probe.getLocalAddress();
                    if (local != null && !local.isAnyLocalAddress()) {
                        return local.getHostAddress();
                    }
                }
            } catch (IOException e) {
                // fall through: the master's name may resolve only later, or not here
            }
        }
        // As PyTorch's default Gloo device: this host's name, if it resolves to an address that can be bound.
        try {
            InetAddress local = InetAddress.getLocalHost();
            try (ServerSocket probe = new ServerSocket(0, 1, local)) {
                return local.getHostAddress();
            }
        } catch (IOException e) {
            return "127.0.0.1";
        }
    }

    private static String interfaceAddress(String name) {
        try {
            NetworkInterface nic = NetworkInterface.getByName(name);
            if (nic == null) {
                List<String> names = new ArrayList<>();
                for (NetworkInterface n : Collections.list(NetworkInterface.getNetworkInterfaces())) {
                    names.add(n.getName());
                }
                throw new IllegalStateException("GLOO_SOCKET_IFNAME=" + name + ": no such network interface (this"
                        + " machine has " + names + ")");
            }
            InetAddress fallback = null;
            for (InetAddress a : Collections.list(nic.getInetAddresses())) {
                if (a instanceof Inet4Address) {
                    return a.getHostAddress();
                }
                if (fallback == null) {
                    fallback = a;
                }
            }
            if (fallback == null) {
                throw new IllegalStateException("GLOO_SOCKET_IFNAME=" + name + ": the interface has no address");
            }
            String s = fallback.getHostAddress();
            int zone = s.indexOf('%');
            return zone >= 0 ? s.substring(0, zone) : s;
        } catch (SocketException e) {
            throw new IllegalStateException("GLOO_SOCKET_IFNAME=" + name + ": cannot list network interfaces: " + e, e);
        }
    }

    /**
     * The rendezvous store as the native group calls it: each call goes to {@code store} unchanged,
     * exceptions included (the native side turns them into the group's errors).
     */
    private record StoreForNative(Store store) implements NativeStore {
        @Override
        public void set(String key, byte[] value) {
            store.set(key, value);
        }

        @Override
        public byte[] get(String key) {
            return store.get(key);
        }

        @Override
        public void waitFor(String[] keys) {
            store.waitFor(Arrays.asList(keys));
        }

        @Override
        public void waitFor(String[] keys, long timeoutMs) {
            store.waitFor(Arrays.asList(keys), Duration.ofMillis(timeoutMs));
        }
    }
}
