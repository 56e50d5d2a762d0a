package org.ddp4j.distributed.store;

import static org.ddp4j.distributed.store.TcpStoreProtocol.*;
import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.ThreadLocalRandom;
import org.ddp4j.distributed.DistributedException;
import org.ddp4j.distributed.DistributedTimeoutException;

/**
 * A {@link Store} served over TCP by one process and used by all: PyTorch's
 * {@code torch.distributed.TCPStore}.
 *
 * <p>The server is hosted by rank 0 (or by node 0's launcher agent); every rank, the server's own
 * included, is a client with one connection. Blocking calls ({@link #get}, {@link #waitFor}) are
 * waited out by the server, in that connection's thread, with the client's timeout, so a waiting
 * client never holds up the others. One call runs at a time per {@code TcpStore} instance; threads
 * that share an instance take turns (use one instance per thread for concurrent blocking calls).
 *
 * <p>Security: clients and server prove to each other that they know the same
 * {@link StoreSecret} (an HMAC-SHA256 challenge–response, see {@link TcpStoreProtocol}) before
 * any key is read or written; the server caps key and value sizes and its connections, and
 * listens only on the master address's interface ({@link StoreBindAddress}); see
 * {@link TcpStoreOptions} for the settings.
 *
 * <p>Deadlines: connecting is bounded by the timeout; every request by the request timeout (the
 * store's timeout, at least 5 s) beyond the time a blocking request asked the server to wait, so
 * a stopped or unreachable server ends each call with a {@link DistributedTimeoutException}
 * naming the address, the operation and the key, never a hang.
 *
 * <p>Errors: a port that is already taken, a client that cannot reach the server within the
 * timeout, a host with a different secret, and a lost connection each throw a
 * {@link DistributedException} that names the address; timeouts throw
 * {@link DistributedTimeoutException} naming the keys that were missing.
 */
public final class TcpStore implements Store {
    /** The shortest default deadline for an answer, so that a tiny wait timeout does not make a busy server look dead. */
    private static final long MIN_ANSWER_MS = 5_000;
    /** The most a blocking request's answer may lag behind the wait it asked for. */
    private static final long MAX_ANSWER_GRACE_MS = 30_000;

    private final String host;
    private final int port;
    private final Duration timeout;
    private final TcpStoreServer server;
    private final String where;
    private final StoreSecret secret;
    private final long requestMs;
    private StoreHandshake.Limits limits;
    private final Object io = new Object();
    private volatile Socket socket;
    private DataInputStream in;
    private DataOutputStream out;
    private volatile boolean closed;
    private String broken; // why the connection can no longer be used, or null

    /**
     * Connects to (and, if {@code isServer}, first starts) the store at {@code host:port}.
     * Mirrors {@code torch.distributed.TCPStore(host_name, port, is_master=isServer, timeout=timeout)}.
     *
     * <p>As a server it binds {@code host:port} ({@code "0.0.0.0"} listens on every interface;
     * port 0 picks a free port, see {@link #port()}; {@code DDP4J_STORE_BIND_ADDR} overrides the
     * address, and a host name that resolves to loopback here listens everywhere, see
     * {@link StoreBindAddress}) and serves from daemon threads until {@link #close()}. As a client
     * it retries, with a growing jittered pause (at most 0.5 s), until {@code timeout} passes:
     * refused connections, since the server may start after its clients, and connections the
     * server accepted but dropped or did not answer during the handshake (a server flooded with
     * connections that never authenticate drops the oldest of them). Both read the secret and limits from the environment
     * ({@link TcpStoreOptions#fromEnvironment()}).
     *
     * @param host the master's address (MASTER_ADDR); for a server, an address of this machine
     * @param port the master's port (MASTER_PORT); 0 with {@code isServer} picks a free one
     * @param isServer whether this instance hosts the store
     * @param timeout how long to keep trying to connect, and the default wait of blocking calls
     * @throws DistributedException if the port is already in use or the host is not an address of this machine (server),
     *     the secret cannot be found (see {@link StoreSecret}), or the server and this process have different secrets
     *     (the message says how to give every host the same one)
     * @throws DistributedTimeoutException if the server cannot be reached within {@code timeout} (client)
     * @throws IllegalArgumentException if the port is outside 0..65535 (0 only for a server) or the timeout is negative
     */
    public TcpStore(String host, int port, boolean isServer, Duration timeout) {
        this(host, port, isServer, timeout, TcpStoreOptions.fromEnvironment());
    }

    /**
     * As {@link #TcpStore(String, int, boolean, Duration)}, with explicit {@link TcpStoreOptions}
     * (secret, size and connection limits, listen address, request timeout) instead of the
     * environment's.
     *
     * @throws DistributedException also if the secret cannot be found, or the server refuses this
     *     process's secret (the message says how to give every host the same one)
     */
    public TcpStore(String host, int port, boolean isServer, Duration timeout, TcpStoreOptions options) {
        this.host = Objects.requireNonNull(host, "host");
        this.timeout = StoreSupport.checkTimeout(timeout);
        Objects.requireNonNull(options, "options");
        if (port < 0 || port > 65535 || (port == 0 && !isServer)) {
            throw new IllegalArgumentException("TcpStore port must be in 1..65535 (0 = any free port, for a server only), got "
                    + port);
        }
        this.secret = options.secret();
        this.requestMs = options.requestTimeout() != null ? StoreSupport.toMillisSaturated(options.requestTimeout())
                : Math.max(StoreSupport.toMillisSaturated(timeout), MIN_ANSWER_MS);
        this.server = isServer ? new TcpStoreServer(host, port, options.withSecret(secret)) : null;
        this.port = isServer ? server.port() : port;
        this.where = "TcpStore at " + host + ":" + this.port;
        try {
            connect();
        } catch (RuntimeException e) {
            if (server != null) {
                server.close();
            }
            throw e;
        }
    }

    /**
     * Starts a store server on {@code host:port} and connects to it; same as
     * {@code new TcpStore(host, port, true, timeout)}.
     *
     * @throws DistributedException if the port is already in use or the host is not an address of this machine
     */
    public static TcpStore server(String host, int port, Duration timeout) {
        return new TcpStore(host, port, true, timeout);
    }

    /**
     * Connects to the store server at {@code host:port}, waiting up to {@code timeout} for it to come up;
     * same as {@code new TcpStore(host, port, false, timeout)}.
     *
     * @throws DistributedTimeoutException if the server cannot be reached within {@code timeout}, naming host:port
     * @throws DistributedException if something other than a ddp4j TcpStore answers on that port
     */
    public static TcpStore client(String host, int port, Duration timeout) {
        return new TcpStore(host, port, false, timeout);
    }

    /** {@link #server(String, int, Duration)} with explicit options. */
    public static TcpStore server(String host, int port, Duration timeout, TcpStoreOptions options) {
        return new TcpStore(host, port, true, timeout, options);
    }

    /** {@link #client(String, int, Duration)} with explicit options. */
    public static TcpStore client(String host, int port, Duration timeout, TcpStoreOptions options) {
        return new TcpStore(host, port, false, timeout, options);
    }

    /**
     * This end's address of the connection to the server (e.g. "10.0.0.2"): the address other
     * hosts know this process by, as far as the store can tell.
     */
    public String localAddress() {
        return socket.getLocalAddress().getHostAddress();
    }

    /** The server side, for tests of its defences; null for a client. */
    TcpStoreServer serverForTests() {
        return server;
    }

    /** The host this store was given (the master address). Mirrors {@code TCPStore.host}. */
    public String host() {
        return host;
    }

    /** The server's port: the bound port for a server started with port 0. Mirrors {@code TCPStore.port}. */
    public int port() {
        return port;
    }

    /** Whether this instance hosts the server. */
    public boolean isServer() {
        return server != null;
    }

    /** The most one connection attempt waits for the server's half of the handshake before trying again. */
    private static final long MAX_HANDSHAKE_ATTEMPT_MS = 15_000;
    /** The longest pause between connection attempts. */
    private static final long MAX_RETRY_PAUSE_MS = 500;

    /**
     * Connects and authenticates, retrying until the timeout whatever may pass: a server not yet
     * listening, one that refuses for now (too many connections), and one that accepted but
     * dropped or did not answer the handshake (a store flooded with connections that never
     * authenticate drops the oldest of them). A foreign protocol or a wrong secret fails at once.
     */
    private void connect() {
        String target = connectTarget();
        long deadline = StoreSupport.deadlineNanos(timeout);
        long sleepMs = 10;
        Exception last = null;
        Exception refusal = null; // the server's own reason outranks a later connect timeout
        String unanswered = null; // how the last accepted but unfinished handshake ended
        int accepted = 0; // connections the server accepted whose handshake did not finish
        while (true) {
            Socket s = new Socket();
            try {
                long remainingMs = Math.max(1, (deadline - System.nanoTime()) / 1_000_000);
                InetSocketAddress address = new InetSocketAddress(target, port);
                if (address.isUnresolved()) {
                    throw new IOException("cannot resolve host \"" + target + "\"");
                }
                s.connect(address, (int) Math.min(remainingMs, 5_000));
                s.setTcpNoDelay(true);
                long handshakeMs = Math.max(Math.min(remainingMs, MAX_HANDSHAKE_ATTEMPT_MS), MIN_ANSWER_MS);
                s.setSoTimeout((int) Math.min(handshakeMs, Integer.MAX_VALUE));
                DataInputStream din = new DataInputStream(new BufferedInputStream(s.getInputStream()));
                DataOutputStream dout = new DataOutputStream(new BufferedOutputStream(s.getOutputStream()));
                try (CallDeadline d = CallDeadline.arm(s, handshakeMs)) {
                    try {
                        limits = StoreHandshake.client(din, dout, secret, host + ":" + port);
                    } catch (StoreHandshake.NotAStoreException e) {
                        throw new DistributedException(e.getMessage());
                    } catch (IOException e) {
                        accepted++;
                        unanswered = d.expired() || e instanceof SocketTimeoutException
                                ? "did not answer the handshake within " + handshakeMs + " ms"
                                : "closed it during the handshake (" + e + ")";
                        throw e;
                    }
                }
                socket = s;
                in = din;
                out = dout;
                return;
            } catch (StoreHandshake.RefusedException e) {
                StoreSupport.closeQuietly(s); // e.g. too many connections: they may free up
                refusal = e;
                last = e;
            } catch (IOException e) {
                StoreSupport.closeQuietly(s); // not listening yet, or the handshake was cut: try again
                last = e;
            } catch (RuntimeException e) {
                StoreSupport.closeQuietly(s);
                throw e;
            }
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                throw connectFailed(refusal, last, unanswered, accepted);
            }
            long pause = Math.min(sleepMs, Math.max(1, left / 1_000_000));
            sleep(pause / 2 + ThreadLocalRandom.current().nextLong(pause / 2 + 1)); // jittered, so that retries spread
            sleepMs = Math.min(sleepMs * 2, MAX_RETRY_PAUSE_MS);
        }
    }

    /** Why connecting failed for the whole timeout: the server's refusal, else its unfinished handshakes, else the last error. */
    private DistributedTimeoutException connectFailed(Exception refusal, Exception last, String unanswered, int accepted) {
        String base = "Could not connect to the TcpStore at " + host + ":" + port + " within "
                + StoreSupport.formatDuration(timeout);
        String notUp = "the master (rank 0, or node 0's launcher) may not be up, or --master-addr/MASTER_ADDR and"
                + " --master-port/MASTER_PORT may not point at it";
        if (refusal != null) {
            return new DistributedTimeoutException(base + " (" + refusal.getMessage() + (last == refusal ? ""
                    : "; last error: " + last) + "): " + notUp);
        }
        if (unanswered != null) {
            return new DistributedTimeoutException(base + ": the store at " + host + ":" + port + " accepted "
                    + (accepted == 1 ? "the connection but " : accepted + " connections but the last time it ")
                    + unanswered + ". The store's process (rank 0, or node 0's launcher) may be stopped or hung, or"
                    + " flooded with connections that never authenticate (its log names them), or another program"
                    + " holds that port (check --master-port / MASTER_PORT)");
        }
        return new DistributedTimeoutException(base + " (last error: " + last + "): " + notUp);
    }

    /** Where this instance's own connection goes: a wildcard-bound server is reached through its master address or loopback. */
    private String connectTarget() {
        if (server == null) {
            return host;
        }
        String bound = server.boundAddress().getHostAddress();
        if (!server.boundAddress().isAnyLocalAddress()) {
            return bound;
        }
        return isWildcard(host) ? "127.0.0.1" : host;
    }

    private static boolean isWildcard(String h) {
        return h.equals("0.0.0.0") || h.equals("::") || h.equals("[::]") || h.equals("0:0:0:0:0:0:0:0");
    }

    /** One request and its answer. */
    private interface Exchange<T> {
        T run(DataInputStream in, DataOutputStream out) throws IOException;
    }

    private <T> T call(String what, long waitMs, Exchange<T> exchange) {
        synchronized (io) {
            if (closed) {
                throw new DistributedException(where + " is closed; cannot " + what);
            }
            if (broken != null) {
                throw new DistributedException("The connection to the " + where + " is no longer usable (" + broken
                        + "); cannot " + what);
            }
            long deadlineMs = waitMs > 0 ? StoreSupport.saturatedAdd(waitMs, Math.min(requestMs, MAX_ANSWER_GRACE_MS))
                    : requestMs;
            try (CallDeadline deadline = CallDeadline.arm(socket, deadlineMs)) {
                try {
                    socket.setSoTimeout((int) Math.min(deadlineMs, Integer.MAX_VALUE));
                    return exchange.run(in, out);
                } catch (SocketTimeoutException e) {
                    throw noAnswer(what, deadlineMs);
                } catch (IOException e) {
                    if (deadline.expired()) {
                        throw noAnswer(what, deadlineMs);
                    }
                    broken = e.toString();
                    if (closed) {
                        throw new DistributedException(where + " was closed during " + what, e);
                    }
                    throw new DistributedException("Lost the connection to the " + where + " during " + what + " (" + e
                            + "): the master process that hosts the store (rank 0, or node 0's launcher) may have exited",
                            e);
                }
            }
        }
    }

    private DistributedTimeoutException noAnswer(String what, long deadlineMs) {
        broken = "no answer within " + deadlineMs + " ms";
        StoreSupport.closeQuietly(socket);
        return new DistributedTimeoutException("The " + where + " did not answer " + what + " within " + deadlineMs
                + " ms: the master (rank 0, or node 0's launcher) may be stopped or hung, or the network to it may be"
                + " down");
    }

    /** Refuses a key or value the server would reject, before sending anything. */
    private void checkSize(String op, String key, byte[] bytes, int max, String what, String limitName) {
        if (bytes.length > max) {
            String shown = key.length() > 60 ? key.substring(0, 60) + "..." : key;
            throw new IllegalArgumentException("TcpStore " + op + "(\"" + shown + "\"): the " + what + " is "
                    + bytes.length + " bytes, more than the " + max + " the " + where + " accepts (" + limitName
                    + " on the store's host)");
        }
    }

    private void checkKey(String op, String key) {
        StoreSupport.checkKey(key);
        checkSize(op, key, key.getBytes(java.nio.charset.StandardCharsets.UTF_8), limits.maxKeyBytes(), "key",
                TcpStoreOptions.MAX_KEY_BYTES_ENV);
    }

    private void checkValue(String op, String key, byte[] value) {
        checkSize(op, key, value, limits.maxValueBytes(), "value", TcpStoreOptions.MAX_VALUE_BYTES_ENV);
    }

    /** Reads the status byte; throws for TIMEOUT and ERROR answers. */
    private void expectOk(DataInputStream in, Duration waited) throws IOException {
        byte status = in.readByte();
        if (status == OK) {
            return;
        }
        if (status == TIMEOUT) {
            List<String> missing = readStrings(in);
            throw new DistributedTimeoutException(StoreSupport.timeoutMessage(waited, missing, where));
        }
        if (status == ERROR) {
            throw new DistributedException(readString(in) + " (via " + where + ")");
        }
        throw new IOException("corrupt TcpStore answer: status " + status);
    }

    /**
     * {@inheritDoc}
     *
     * @throws DistributedException if the connection to the server is lost
     */
    @Override
    public void set(String key, byte[] value) {
        checkKey("set", key);
        Objects.requireNonNull(value, "value");
        checkValue("set", key, value);
        call("set(\"" + key + "\")", 0, (in, out) -> {
            out.writeByte(SET);
            writeString(out, key);
            writeBytes(out, value);
            out.flush();
            expectOk(in, timeout);
            return null;
        });
    }

    /**
     * {@inheritDoc}
     *
     * @throws DistributedTimeoutException naming the key, if it is not set within {@link #timeout()}
     * @throws DistributedException if the connection to the server is lost
     */
    @Override
    public byte[] get(String key) {
        checkKey("get", key);
        long waitMs = StoreSupport.toMillisSaturated(timeout);
        return call("get(\"" + key + "\")", waitMs, (in, out) -> {
            out.writeByte(GET);
            writeString(out, key);
            out.writeLong(waitMs);
            out.flush();
            expectOk(in, timeout);
            return readBytes(in);
        });
    }

    /**
     * {@inheritDoc}
     *
     * @throws DistributedException if the key holds a value that is not a decimal counter, or the connection is lost
     */
    @Override
    public long add(String key, long delta) {
        checkKey("add", key);
        return call("add(\"" + key + "\")", 0, (in, out) -> {
            out.writeByte(ADD);
            writeString(out, key);
            out.writeLong(delta);
            out.flush();
            expectOk(in, timeout);
            return in.readLong();
        });
    }

    /** {@inheritDoc} An absent key with a non-empty {@code expected} is left absent and {@code expected} is returned, as in PyTorch. */
    @Override
    public byte[] compareSet(String key, byte[] expected, byte[] desired) {
        checkKey("compareSet", key);
        Objects.requireNonNull(expected, "expected");
        Objects.requireNonNull(desired, "desired");
        checkValue("compareSet", key, expected);
        checkValue("compareSet", key, desired);
        return call("compareSet(\"" + key + "\")", 0, (in, out) -> {
            out.writeByte(COMPARE_SET);
            writeString(out, key);
            writeBytes(out, expected);
            writeBytes(out, desired);
            out.flush();
            expectOk(in, timeout);
            return readBytes(in);
        });
    }

    /**
     * {@inheritDoc}
     *
     * @param timeout how long the server waits; zero checks once
     * @throws DistributedTimeoutException naming the keys still missing after {@code timeout}
     * @throws DistributedException if the connection to the server is lost
     */
    @Override
    public void waitFor(List<String> keys, Duration timeout) {
        StoreSupport.checkKeys(keys);
        keys.forEach(k -> checkKey("waitFor", k));
        Objects.requireNonNull(timeout, "timeout");
        long waitMs = StoreSupport.toMillisSaturated(timeout);
        call("waitFor(" + StoreSupport.quote(keys) + ")", waitMs, (in, out) -> {
            out.writeByte(WAIT);
            writeStrings(out, keys);
            out.writeLong(waitMs);
            out.flush();
            expectOk(in, timeout);
            return null;
        });
    }

    @Override
    public boolean check(List<String> keys) {
        StoreSupport.checkKeys(keys);
        keys.forEach(k -> checkKey("check", k));
        return call("check(" + StoreSupport.quote(keys) + ")", 0, (in, out) -> {
            out.writeByte(CHECK);
            writeStrings(out, keys);
            out.flush();
            expectOk(in, timeout);
            return in.readBoolean();
        });
    }

    @Override
    public boolean deleteKey(String key) {
        checkKey("deleteKey", key);
        return call("deleteKey(\"" + key + "\")", 0, (in, out) -> {
            out.writeByte(DELETE);
            writeString(out, key);
            out.flush();
            expectOk(in, timeout);
            return in.readBoolean();
        });
    }

    /**
     * {@inheritDoc} The server deletes the key when this instance's connection closes.
     *
     * @throws DistributedException if the connection to the server is lost
     */
    @Override
    public byte[] claimWhileConnected(String key, byte[] value) {
        checkKey("claimWhileConnected", key);
        Objects.requireNonNull(value, "value");
        checkValue("claimWhileConnected", key, value);
        return call("claimWhileConnected(\"" + key + "\")", 0, (in, out) -> {
            out.writeByte(CLAIM);
            writeString(out, key);
            writeBytes(out, value);
            out.flush();
            expectOk(in, timeout);
            return readBytes(in);
        });
    }

    /** The number of keys in the store. Mirrors {@code Store.num_keys}. */
    public int numKeys() {
        return call("numKeys()", 0, (in, out) -> {
            out.writeByte(NUM_KEYS);
            out.flush();
            expectOk(in, timeout);
            return in.readInt();
        });
    }

    /** The default wait of blocking calls, and how long the constructor kept trying to connect. */
    @Override
    public Duration timeout() {
        return timeout;
    }

    /**
     * Closes this client's connection and, on the server instance, stops the server: its socket
     * and threads are closed, and other clients' calls then fail with a lost-connection error.
     * Idempotent. A call blocked in another thread fails with a {@link DistributedException}.
     */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        StoreSupport.closeQuietly(socket); // unblocks a call in progress in another thread
        if (server != null) {
            server.close();
        }
    }

    private static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new DistributedException("Interrupted while connecting to a TcpStore");
        }
    }

    @Override
    public String toString() {
        return where + (server != null ? " (server)" : "");
    }
}
