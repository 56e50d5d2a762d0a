package org.ddp4j.distributed;

import java.io.IOException;
import java.net.DatagramSocket;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;
import java.nio.charset.StandardCharsets;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import org.ddp4j.distributed.store.Store;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The address a Gloo rank advertises when {@link ProcessGroupGloo#defaultHostname} cannot know it alone: MASTER_ADDR
 * is a host <em>name</em> (not {@code localhost}) that resolves to a loopback address on this machine, as Debian's
 * {@code /etc/hosts} maps the host's own name to {@code 127.0.1.1}. The ranks on this host would then advertise
 * 127.0.0.1, which is right when every rank runs here and unreachable for ranks on other hosts (they resolve the
 * name to this host's network address, and the store, which listens on every interface then, let them in).
 *
 * <p>So every rank publishes the address it advertises ({@link #UNDECIDED} when it is in that case itself) in the
 * group's store, and a rank in that case reads the others': when some rank runs on another host, it advertises
 * its own address on the route to that rank, as the store answers on every interface; when all run here, 127.0.0.1.
 * PyTorch's Gloo has the same problem and only warns.
 */
final class GlooAdvertisedAddress {
    private static final Logger LOG = LoggerFactory.getLogger(GlooAdvertisedAddress.class);

    /** What the choice needs from the network, injected by tests. */
    interface Network {
        /** {@code host} resolved here. */
        InetAddress resolve(String host) throws UnknownHostException;

        /** This host's address on the route to {@code remote}, or null when there is no route. */
        InetAddress routeFrom(InetAddress remote);
    }

    /** Name resolution and the kernel's routes: a connected UDP socket (which sends nothing) says the local end. */
    static final Network SYSTEM = new Network() {
        @Override
        public InetAddress resolve(String host) throws UnknownHostException {
            return InetAddress.getByName(host);
        }

        @Override
        public InetAddress routeFrom(InetAddress remote) {
            try (DatagramSocket probe = new DatagramSocket()) {
                probe.connect(new InetSocketAddress(remote, 9));
                InetAddress local = probe.getLocalAddress();
                return local == null || local.isAnyLocalAddress() ? null : local;
            } catch (IOException | RuntimeException e) {
                return null;
            }
        }
    };

    private GlooAdvertisedAddress() {}

    /** What a rank in that case publishes: it advertises whatever the others' addresses call for. */
    static final String UNDECIDED = "?";

    static String key(int rank) {
        return "ddp4j/gloo-address/" + rank;
    }

    /**
     * The address this rank advertises: {@code chosen} (from {@link ProcessGroupGloo#defaultHostname}), unless
     * {@code masterAddr} is a name that resolves to loopback here and no address was configured; then the address
     * that reaches the other ranks (see the class comment). Every rank of the group must call it (each publishes
     * its address); only the ranks in that case wait for the others'.
     *
     * @param store the group's store (the init's key space)
     * @param options the Gloo settings: when DDP4J_GLOO_HOSTNAME or GLOO_SOCKET_IFNAME chose the address, it stays
     * @throws DistributedException when ranks run on other hosts but no address of this host routes to them,
     *     naming MASTER_ADDR, the address it resolved to and the fix
     * @throws DistributedTimeoutException when a peer does not publish its address within the store's timeout
     */
    static String agree(Store store, int rank, int worldSize, String masterAddr, GlooOptions options, String chosen) {
        return agree(store, rank, worldSize, masterAddr, options, chosen, SYSTEM);
    }

    /** {@link #agree(Store, int, int, String, GlooOptions, String)} with name resolution and routes from {@code net}. */
    static String agree(Store store, int rank, int worldSize, String masterAddr, GlooOptions options, String chosen,
            Network net) {
        if (worldSize <= 1) {
            return chosen;
        }
        boolean configured = !isBlank(options.hostname()) || !isBlank(options.socketIfname());
        InetAddress loopback = configured ? null : loopbackMaster(masterAddr, net);
        store.set(key(rank), (loopback == null ? chosen : UNDECIDED).getBytes(StandardCharsets.UTF_8));
        if (loopback == null) {
            return chosen;
        }
        Map<Integer, String> peers = new TreeMap<>();
        for (int peer = 0; peer < worldSize; peer++) {
            if (peer != rank) {
                peers.put(peer, new String(store.get(key(peer)), StandardCharsets.UTF_8));
            }
        }
        String address = choose(masterAddr, loopback, rank, peers, net);
        if (!address.equals(chosen)) {
            LOG.info("MASTER_ADDR={} resolves to the loopback address {} on this host (as Debian's /etc/hosts maps"
                    + " the host's own name), which ranks on other hosts cannot reach; rank {} advertises {} to Gloo"
                    + " instead, its address on the route to them (set DDP4J_GLOO_HOSTNAME or GLOO_SOCKET_IFNAME to"
                    + " choose one)", masterAddr, loopback.getHostAddress(), rank, address);
        }
        return address;
    }

    /**
     * What {@code masterAddr} resolves to here when it is a host name, other than localhost's names, that
     * resolves to a loopback address; else null (a literal, localhost, a network address, or no such name).
     */
    static InetAddress loopbackMaster(String masterAddr, Network net) {
        if (masterAddr == null || masterAddr.isBlank()) {
            return null;
        }
        String host = masterAddr.trim();
        if (isLiteral(host) || isLocalhostName(host)) {
            return null;
        }
        try {
            InetAddress a = net.resolve(host);
            return a.isLoopbackAddress() ? a : null;
        } catch (UnknownHostException e) {
            return null;
        }
    }

    /**
     * The address to advertise on a host where {@code masterAddr} resolved to the loopback address
     * {@code resolved}: this host's address on the route to the first peer that runs on another host, or
     * 127.0.0.1 when every peer runs here (a peer that advertises loopback, that is itself in this case
     * ({@link #UNDECIDED}), or whose address is this host's own).
     *
     * @param peers each other rank's advertised address, {@link #UNDECIDED} for a rank that is in this case too
     * @throws DistributedException when a peer runs on another host and no address of this host routes to it
     */
    static String choose(String masterAddr, InetAddress resolved, int rank, Map<Integer, String> peers, Network net) {
        for (Map.Entry<Integer, String> peer : peers.entrySet()) {
            String advertised = peer.getValue().trim();
            if (advertised.equals(UNDECIDED) || advertised.isEmpty()) {
                continue; // on a host where MASTER_ADDR is loopback too: this one, as only one host resolves it so
            }
            InetAddress remote;
            try {
                remote = net.resolve(advertised);
            } catch (UnknownHostException e) {
                continue; // Gloo's connect names it
            }
            if (remote.isLoopbackAddress()) {
                continue;
            }
            InetAddress local = net.routeFrom(remote);
            if (local != null && local.equals(remote)) {
                continue; // the peer advertises an address of this host
            }
            if (local == null || local.isLoopbackAddress()) {
                throw new DistributedException("MASTER_ADDR=" + masterAddr + " resolves to the loopback address "
                        + resolved.getHostAddress() + " on rank " + rank + "'s host (as Debian's /etc/hosts maps the"
                        + " host's own name), which rank " + peer.getKey() + " at " + advertised + " on another host"
                        + " cannot reach, and no address of this host routes to " + advertised + ": set"
                        + " DDP4J_GLOO_HOSTNAME to this host's address on the network the ranks share (or"
                        + " GLOO_SOCKET_IFNAME to its interface), or set MASTER_ADDR to that address instead of a"
                        + " name, or map the name to it in /etc/hosts");
            }
            return local.getHostAddress();
        }
        return "127.0.0.1";
    }

    private static boolean isBlank(String s) {
        return s == null || s.isBlank();
    }

    private static boolean isLocalhostName(String host) {
        String h = host.toLowerCase(Locale.ROOT);
        return h.equals("localhost") || h.startsWith("localhost.") || h.endsWith(".localhost")
                || h.equals("ip6-localhost") || h.equals("ip6-loopback");
    }

    private static boolean isLiteral(String host) {
        return host.matches("[0-9.]+") || host.contains(":");
    }
}
