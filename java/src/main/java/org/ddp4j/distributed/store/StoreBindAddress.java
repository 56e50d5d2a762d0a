package org.ddp4j.distributed.store;

import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.Locale;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Which address a {@link TcpStoreServer} listens on, given the master address it serves.
 *
 * <p>By default only the master address's own interface: other networks of the host cannot reach
 * the store. {@code DDP4J_STORE_BIND_ADDR} (or {@link TcpStoreOptions#withBindAddress}) overrides
 * it, e.g. {@code 0.0.0.0} for every interface. One exception: a host <em>name</em> (not
 * {@code localhost}) that resolves to a loopback address here, as Debian's {@code /etc/hosts}
 * maps the machine's own name to {@code 127.0.1.1}. Other hosts resolve that name to this
 * machine's network address, which a loopback-bound store would not answer; so the store listens
 * on every interface and says so in the log. Authentication keeps strangers out either way.
 */
final class StoreBindAddress {
    private static final Logger LOG = LoggerFactory.getLogger(StoreBindAddress.class);

    private StoreBindAddress() {}

    /**
     * @param masterAddr the address the clients use (MASTER_ADDR, or a literal such as 0.0.0.0)
     * @param configured the configured listen address, or null
     * @return the address to bind
     */
    static String choose(String masterAddr, String configured) {
        if (configured != null) {
            return configured;
        }
        if (isLiteral(masterAddr) || isLocalhostName(masterAddr)) {
            return masterAddr;
        }
        try {
            InetAddress a = InetAddress.getByName(masterAddr);
            if (a.isLoopbackAddress()) {
                LOG.info("The master address {} resolves to the loopback address {} on this machine (as Debian's"
                        + " /etc/hosts maps a host's own name), which other hosts cannot reach; the TcpStore listens"
                        + " on every interface instead (set {} to choose one)", masterAddr, a.getHostAddress(),
                        TcpStoreOptions.BIND_ADDR_ENV);
                return "0.0.0.0";
            }
        } catch (UnknownHostException e) {
            // the server's bind reports the unresolvable name
        }
        return masterAddr;
    }

    private static boolean isLocalhostName(String host) {
        String h = host.toLowerCase(Locale.ROOT);
        return h.equals("localhost") || h.startsWith("localhost.") || h.endsWith(".localhost")
                || h.equals("ip6-localhost") || h.equals("ip6-loopback");
    }

    /** An IPv4 or IPv6 literal (resolving it does no lookup). */
    static boolean isLiteral(String host) {
        return host.matches("[0-9.]+") || host.contains(":");
    }
}
