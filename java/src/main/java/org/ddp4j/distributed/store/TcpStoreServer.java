package org.ddp4j.distributed.store;

import static org.ddp4j.distributed.store.TcpStoreProtocol.*;
import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.net.BindException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.ddp4j.distributed.DistributedException;
import org.ddp4j.distributed.StoreException;

/**
 * The server half of {@link TcpStore}: a listening socket, an accept thread, and one daemon thread
 * per client connection. The keys live in a {@link HashStore}; blocking requests wait on its
 * condition in the connection's own thread, so a waiting client never holds up the others.
 *
 * <p>Defences, each closing only the offending connection (logged at warn with the peer's
 * address, see {@link RefusalLog}): a connection must authenticate ({@link StoreHandshake})
 * within the handshake timeout before any request is read; key and value lengths above the
 * limits, negative lengths and unknown opcodes close the connection before anything is
 * allocated; a connection beyond {@link TcpStoreOptions#maxConnections()} authenticated ones is
 * refused with a reason the client reports.
 *
 * <p>A flood of connections that never authenticate cannot starve the job's peers: at most
 * {@link #MAX_PENDING} connections (and never more than the free slots) may be in their
 * handshake at once, and a new one beyond that pushes out the oldest pending one that has not
 * sent a byte (else the oldest pending one). A real client sends its hello at once and
 * authenticates within a round trip or two, so it is never the oldest silent one for long; a
 * client whose handshake was cut all the same tries again ({@link TcpStore}). Authenticated
 * connections are never pushed out.
 */
final class TcpStoreServer implements AutoCloseable {
    private static final AtomicInteger SERVERS = new AtomicInteger();
    /** Refused connections kept open briefly so that their refusal is read before the close; beyond this, closed at once. */
    private static final int MAX_LINGERING = 256;
    /** How long a refused connection stays open after its refusal was sent. */
    private static final long LINGER_MS = 1_000;
    /** The most connections in their handshake at once; beyond it the oldest silent one is dropped. */
    static final int MAX_PENDING = 256;

    private final ServerSocket serverSocket;
    private final String where;
    private final HashStore state;
    private final StoreSecret secret;
    private final TcpStoreOptions options;
    private final StoreHandshake.Limits limits;
    private final RefusalLog refusals;
    private final AtomicInteger open = new AtomicInteger();
    /** Connections that completed the handshake and are still open. */
    private final AtomicInteger authenticated = new AtomicInteger();
    /** Connections still in their handshake, oldest first; guarded by itself. */
    private final Map<Socket, Pending> pending = new LinkedHashMap<>();
    private final ScheduledThreadPoolExecutor closer;
    private final AtomicInteger lingering = new AtomicInteger();
    private final Set<Socket> connections = ConcurrentHashMap.newKeySet();
    private final Set<Thread> threads = ConcurrentHashMap.newKeySet();
    private final Thread acceptThread;
    private volatile boolean closed;

    /**
     * Binds {@code host:port} with the options of the environment ({@link TcpStoreOptions#fromEnvironment()}).
     *
     * @throws DistributedException if the port is in use, the address is not one of this machine's,
     *     or the store secret cannot be found or created
     */
    TcpStoreServer(String host, int port) {
        this(host, port, TcpStoreOptions.fromEnvironment());
    }

    /**
     * Binds the address {@link StoreBindAddress} chooses for {@code host} (or the configured one)
     * and starts accepting.
     *
     * @throws DistributedException if the port is in use, the address is not one of this machine's,
     *     or the store secret cannot be found or created
     */
    TcpStoreServer(String host, int port, TcpStoreOptions options) {
        this.options = options;
        this.secret = options.secret(); // fail before binding if there is no usable secret
        this.limits = new StoreHandshake.Limits(options.maxKeyBytes(), options.maxValueBytes());
        String bindHost = StoreBindAddress.choose(host, options.bindAddress());
        InetSocketAddress address = new InetSocketAddress(bindHost, port);
        if (address.isUnresolved()) {
            throw new DistributedException("TcpStore server: cannot resolve host \"" + bindHost
                    + "\"; set --master-addr / MASTER_ADDR to an address of this machine");
        }
        ServerSocket ss = null;
        try {
            ss = new ServerSocket();
            ss.setReuseAddress(true); // allow restarting while old connections sit in TIME_WAIT
            ss.bind(address, 1024);
        } catch (BindException e) {
            StoreSupport.closeQuietly(ss);
            // On an address of this machine a bind fails only because the port is taken.
            if (isOwnAddress(address.getAddress())) {
                throw new StoreException("TcpStore server: port " + port + " on " + bindHost
                        + " is already in use (another job or a previous run still holds it); choose another"
                        + " --master-port / MASTER_PORT", e, true);
            }
            throw new StoreException("TcpStore server: cannot listen on " + bindHost + ":" + port + " (" + e.getMessage()
                    + "); --master-addr / MASTER_ADDR must be an address of the machine that hosts the store"
                    + " (or set " + TcpStoreOptions.BIND_ADDR_ENV + "=0.0.0.0 to listen on every interface)", e);
        } catch (IOException e) {
            StoreSupport.closeQuietly(ss);
            throw new DistributedException("TcpStore server: cannot listen on " + bindHost + ":" + port + ": " + e, e);
        }
        this.serverSocket = ss;
        this.where = "TcpStore server at " + host + ":" + ss.getLocalPort();
        this.state = new HashStore(Duration.ZERO, where);
        this.refusals = new RefusalLog(where);
        int id = SERVERS.incrementAndGet();
        this.closer = new ScheduledThreadPoolExecutor(1, r -> {
            Thread t = new Thread(r, "ddp4j-tcpstore-" + id + "-closer");
            t.setDaemon(true);
            return t;
        });
        this.acceptThread = new Thread(this::acceptLoop, "ddp4j-tcpstore-" + id + "-accept-" + ss.getLocalPort());
        acceptThread.setDaemon(true);
        acceptThread.start();
    }

    /** The port actually bound (differs from the requested one when that was 0). */
    int port() {
        return serverSocket.getLocalPort();
    }

    /** The address actually bound (e.g. 0.0.0.0/0.0.0.0 when listening on every interface). */
    InetAddress boundAddress() {
        return serverSocket.getInetAddress();
    }

    /** The latest refused or dropped connections, as logged, oldest first. */
    List<String> refusals() {
        return refusals.recent();
    }

    /** Connections currently held (authenticated or still in their handshake). */
    int openConnections() {
        return open.get();
    }

    /** Connections that completed the handshake and are still open. */
    int authenticatedConnections() {
        return authenticated.get();
    }

    /** A key a connection claimed ({@link Store#claimWhileConnected}), with the value it set. */
    private record Claim(String key, byte[] value) {}

    /** A connection in its handshake. */
    private static final class Pending {
        final Socket socket;
        /** Whether the client has sent its first bytes (a real client sends its hello at once). */
        volatile boolean spoke;
        /** Whether a newer connection pushed this one out (already logged). */
        volatile boolean evicted;

        Pending(Socket socket) {
            this.socket = socket;
        }
    }

    private void acceptLoop() {
        int n = 0;
        while (!closed) {
            Socket s;
            try {
                s = serverSocket.accept();
            } catch (IOException e) {
                if (closed) {
                    return;
                }
                pause(); // e.g. too many open files; keep serving the connections we have, without spinning
                continue;
            }
            if (closed) {
                StoreSupport.closeQuietly(s);
                return;
            }
            if (authenticated.get() >= options.maxConnections()) {
                String reason = "it already serves " + options.maxConnections() + " connections, its limit ("
                        + TcpStoreOptions.MAX_CONNECTIONS_ENV + "=" + options.maxConnections()
                        + " on the store's host): raise it there if the job needs more";
                refusals.refused("refused a connection from", s.getRemoteSocketAddress(), reason);
                refuse(s, reason);
                continue;
            }
            Pending p = new Pending(s);
            Pending victim = admit(p);
            if (victim != null) {
                victim.evicted = true;
                StoreSupport.closeQuietly(victim.socket);
                refusals.refused("dropped a connection from", victim.socket.getRemoteSocketAddress(), "it had not"
                        + (victim.spoke ? " completed" : " begun") + " the handshake when a new connection came, and at"
                        + " most " + pendingLimit() + " may be in their handshake at once (a flood of connections that"
                        + " never authenticate?)");
            }
            open.incrementAndGet();
            connections.add(s);
            Thread t = new Thread(() -> serve(s, p), acceptThread.getName().replace("accept", "conn-" + (++n)));
            t.setDaemon(true);
            threads.add(t);
            t.start();
        }
    }

    /** How many connections may be in their handshake at once: {@link #MAX_PENDING}, and no more than the free slots. */
    private int pendingLimit() {
        return Math.max(1, Math.min(MAX_PENDING, options.maxConnections() - authenticated.get()));
    }

    /** Registers a new connection in its handshake; returns the pending one it pushes out, or null. */
    private Pending admit(Pending p) {
        synchronized (pending) {
            Pending victim = null;
            if (pending.size() >= pendingLimit()) {
                for (Pending q : pending.values()) {
                    if (!q.spoke) {
                        victim = q; // the oldest that never spoke: no real client waits that long to send its hello
                        break;
                    }
                }
                if (victim == null) {
                    victim = pending.values().iterator().next();
                }
                pending.remove(victim.socket);
            }
            pending.put(p.socket, p);
            return victim;
        }
    }

    /** Takes a connection out of the pending set: true if it was still there (not pushed out meanwhile). */
    private boolean leavePending(Pending p) {
        synchronized (pending) {
            return pending.remove(p.socket) != null;
        }
    }

    private static void pause() {
        try {
            Thread.sleep(20);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /**
     * Tells a connection over the cap why it is refused, without a thread: the few bytes fit the
     * socket's empty send buffer, and the socket is closed a second later, once the client has
     * read them (closing at once, with its hello unread, would send a reset that loses them).
     */
    private void refuse(Socket s, String reason) {
        if (lingering.incrementAndGet() > MAX_LINGERING) {
            lingering.decrementAndGet();
            StoreSupport.closeQuietly(s);
            return;
        }
        try {
            DataOutputStream out = new DataOutputStream(new BufferedOutputStream(s.getOutputStream()));
            StoreHandshake.refuse(out, reason);
            s.shutdownOutput();
            closer.schedule(() -> closeRefused(s), LINGER_MS, TimeUnit.MILLISECONDS);
        } catch (IOException | RuntimeException e) {
            closeRefused(s);
        }
    }

    private void closeRefused(Socket s) {
        try {
            var in = s.getInputStream();
            in.skip(in.available()); // the unread hello would turn the close into a reset
        } catch (IOException e) {
            // closing anyway
        }
        StoreSupport.closeQuietly(s);
        lingering.decrementAndGet();
    }

    private void serve(Socket socket, Pending p) {
        Object peer = socket.getRemoteSocketAddress();
        boolean counted = false; // whether this connection counts as authenticated
        List<Claim> claims = new ArrayList<>(); // the keys this connection claimed, deleted as it closes
        try (socket) {
            socket.setTcpNoDelay(true);
            DataInputStream in = new DataInputStream(new BufferedInputStream(socket.getInputStream()));
            DataOutputStream out = new DataOutputStream(new BufferedOutputStream(socket.getOutputStream()));
            if (!authenticate(socket, peer, in, out, p)) {
                return;
            }
            authenticated.incrementAndGet();
            counted = true;
            socket.setSoTimeout(0); // clients may stay idle between calls for as long as they like
            while (!closed) {
                int op;
                try {
                    op = in.readByte();
                } catch (EOFException e) {
                    return; // client closed its end
                }
                try {
                    if (!handle((byte) op, in, out, claims)) {
                        refusals.refused("closed the connection from", peer, "it sent an unknown request (opcode "
                                + op + ")");
                        return;
                    }
                } catch (OversizedException e) {
                    refusals.refused("closed the connection from", peer, e.getMessage());
                    return;
                }
                out.flush();
            }
        } catch (IOException e) {
            // connection reset or the server is closing: nothing to tell anyone
        } finally {
            leavePending(p);
            for (Claim c : claims) {
                state.deleteIfEquals(c.key(), c.value());
            }
            connections.remove(socket);
            threads.remove(Thread.currentThread());
            if (counted) {
                authenticated.decrementAndGet();
            }
            open.decrementAndGet();
        }
    }

    /** Runs the server's half of the handshake within the handshake timeout; logs and returns false on refusal. */
    private boolean authenticate(Socket socket, Object peer, DataInputStream in, DataOutputStream out, Pending p) {
        long ms = StoreSupport.toMillisSaturated(options.handshakeTimeout());
        try (CallDeadline deadline = CallDeadline.arm(socket, ms)) {
            try {
                socket.setSoTimeout((int) Math.min(ms, Integer.MAX_VALUE));
                int magic;
                try {
                    magic = in.readInt();
                } catch (EOFException e) {
                    return false; // a port probe: connected and left
                }
                p.spoke = true;
                if (magic != MAGIC) {
                    refusals.refused("refused a connection from", peer, String.format(java.util.Locale.ROOT,
                            "it sent a request without the TcpStore handshake (no secret; first bytes 0x%08x)", magic));
                    return false;
                }
                int version = in.readInt();
                if (version != VERSION) {
                    out.writeInt(MAGIC);
                    out.writeInt(VERSION);
                    out.flush();
                    refusals.refused("refused a connection from", peer, "it speaks TcpStore protocol " + version
                            + ", this server " + VERSION + " (another ddp4j version)");
                    return false;
                }
                // Leaving the pending set before the client hears it is in: a connection is never pushed out after that.
                StoreHandshake.Verdict v = StoreHandshake.server(in, out, secret, limits, () -> leavePending(p));
                if (!v.accepted()) {
                    if (!p.evicted) {
                        refusals.refused("refused a connection from", peer, v.refusal());
                    }
                    return false;
                }
                return !deadline.expired();
            } catch (IOException e) {
                if (!closed && !p.evicted) {
                    refusals.refused("dropped a connection from", peer, deadline.expired() || e instanceof
                            java.net.SocketTimeoutException ? "it did not complete the handshake within "
                            + StoreSupport.formatDuration(options.handshakeTimeout())
                            : "the handshake failed (" + e + ")");
                }
                return false;
            }
        }
    }

    /** Reads and answers one request; false for an unknown opcode (nothing read, nothing answered). */
    private boolean handle(byte op, DataInputStream in, DataOutputStream out, List<Claim> claims) throws IOException {
        try {
            switch (op) {
                case SET -> {
                    String key = key(in);
                    byte[] value = value(in);
                    state.set(key, value);
                    out.writeByte(OK);
                }
                case GET -> {
                    String key = key(in);
                    Duration timeout = Duration.ofMillis(in.readLong());
                    byte[] value = state.tryGet(key, timeout);
                    if (value == null) {
                        out.writeByte(TIMEOUT);
                        writeStrings(out, List.of(key));
                    } else {
                        out.writeByte(OK);
                        writeBytes(out, value);
                    }
                }
                case ADD -> {
                    String key = key(in);
                    long delta = in.readLong();
                    long value = state.add(key, delta);
                    out.writeByte(OK);
                    out.writeLong(value);
                }
                case COMPARE_SET -> {
                    String key = key(in);
                    byte[] expected = value(in);
                    byte[] desired = value(in);
                    byte[] value = state.compareSet(key, expected, desired);
                    out.writeByte(OK);
                    writeBytes(out, value);
                }
                case WAIT -> {
                    List<String> keys = keys(in);
                    Duration timeout = Duration.ofMillis(in.readLong());
                    List<String> missing = state.tryWait(keys, timeout);
                    if (missing.isEmpty()) {
                        out.writeByte(OK);
                    } else {
                        out.writeByte(TIMEOUT);
                        writeStrings(out, missing);
                    }
                }
                case CHECK -> {
                    List<String> keys = keys(in);
                    boolean all = state.check(keys);
                    out.writeByte(OK);
                    out.writeBoolean(all);
                }
                case DELETE -> {
                    String key = key(in);
                    boolean existed = state.deleteKey(key);
                    out.writeByte(OK);
                    out.writeBoolean(existed);
                }
                case CLAIM -> {
                    String key = key(in);
                    byte[] value = value(in);
                    byte[] now = state.compareSet(key, new byte[0], value); // absent: set; equal: kept
                    if (java.util.Arrays.equals(now, value)) {
                        claims.add(new Claim(key, value));
                    }
                    out.writeByte(OK);
                    writeBytes(out, now);
                }
                case NUM_KEYS -> {
                    out.writeByte(OK);
                    out.writeInt(state.numKeys());
                }
                default -> {
                    return false;
                }
            }
        } catch (DistributedException e) {
            // add() on a non-counter, overflow, shutdown: the request was read in full, so answer it.
            out.writeByte(ERROR);
            writeString(out, String.valueOf(e.getMessage()));
        }
        return true;
    }

    private String key(DataInputStream in) throws IOException {
        return readString(in, options.maxKeyBytes(), "key", TcpStoreOptions.MAX_KEY_BYTES_ENV);
    }

    private List<String> keys(DataInputStream in) throws IOException {
        return readStrings(in, options.maxKeyBytes(), "key", TcpStoreOptions.MAX_KEY_BYTES_ENV);
    }

    private byte[] value(DataInputStream in) throws IOException {
        return readBytes(in, options.maxValueBytes(), "value", TcpStoreOptions.MAX_VALUE_BYTES_ENV);
    }

    /** Stops accepting, closes every connection, wakes blocked requests, and waits briefly for the threads. */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        StoreSupport.closeQuietly(serverSocket);
        for (Runnable r : closer.shutdownNow()) {
            r.run(); // close the lingering refused connections now
        }
        state.shutDown();
        for (Socket s : connections) {
            StoreSupport.closeQuietly(s);
        }
        joinQuietly(acceptThread);
        for (Thread t : threads) {
            joinQuietly(t);
        }
    }

    private static void joinQuietly(Thread t) {
        if (t == Thread.currentThread()) {
            return;
        }
        try {
            t.join(2000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    @Override
    public String toString() {
        return where;
    }

    /** Whether a socket can be bound to {@code address} on this machine: the wildcard or one of its interfaces' addresses. */
    private static boolean isOwnAddress(InetAddress address) {
        try {
            return address.isAnyLocalAddress() || address.isLoopbackAddress()
                    || java.net.NetworkInterface.getByInetAddress(address) != null;
        } catch (java.net.SocketException e) {
            return false;
        }
    }
}
