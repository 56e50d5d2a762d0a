package org.ddp4j.distributed.store;

import java.time.Duration;
import java.util.Map;
import java.util.Objects;
import java.util.function.Supplier;
import org.ddp4j.internal.Setting;

/**
 * Settings of a {@link TcpStore} beyond PyTorch's (host, port, is_master, timeout): its secret,
 * its limits and where its server listens. Immutable; the {@code with*} methods return copies.
 *
 * <p>{@link #fromEnvironment()} reads, with these defaults:
 * <ul>
 *   <li>the secret: see {@link StoreSecret} ({@code DDP4J_STORE_SECRET}, {@code DDP4J_STORE_SECRET_FILE},
 *       {@code ~/.ddp4j/store-secret}), resolved when a store is opened;
 *   <li>{@code DDP4J_STORE_MAX_KEY_BYTES} (64 KiB): the longest key the server accepts;
 *   <li>{@code DDP4J_STORE_MAX_VALUE_BYTES} (16 MiB): the largest value;
 *   <li>{@code DDP4J_STORE_MAX_CONNECTIONS} (1024): connections the server holds at once, each
 *       rank and launcher holding one or two;
 *   <li>{@code DDP4J_STORE_BIND_ADDR} (unset: the master address, see {@link StoreBindAddress}):
 *       the address the server listens on, e.g. {@code 0.0.0.0} for every interface.
 * </ul>
 * Sizes are bytes, optionally with a binary suffix K, M or G ({@code 64M}).
 */
public final class TcpStoreOptions {
    public static final String MAX_KEY_BYTES_ENV = Setting.STORE_MAX_KEY_BYTES.variable();
    public static final String MAX_VALUE_BYTES_ENV = Setting.STORE_MAX_VALUE_BYTES.variable();
    public static final String MAX_CONNECTIONS_ENV = Setting.STORE_MAX_CONNECTIONS.variable();
    public static final String BIND_ADDR_ENV = Setting.STORE_BIND_ADDR.variable();

    public static final int DEFAULT_MAX_KEY_BYTES = 64 << 10;
    public static final int DEFAULT_MAX_VALUE_BYTES = 16 << 20;
    public static final int DEFAULT_MAX_CONNECTIONS = 1024;
    /** How long a new connection may take to authenticate before the server drops it. */
    public static final Duration DEFAULT_HANDSHAKE_TIMEOUT = Duration.ofSeconds(5);

    private final Supplier<StoreSecret> secret;
    private final int maxKeyBytes;
    private final int maxValueBytes;
    private final int maxConnections;
    private final String bindAddress;
    private final Duration handshakeTimeout;
    private final Duration requestTimeout;

    private TcpStoreOptions(Supplier<StoreSecret> secret, int maxKeyBytes, int maxValueBytes, int maxConnections,
            String bindAddress, Duration handshakeTimeout, Duration requestTimeout) {
        this.secret = secret;
        this.maxKeyBytes = maxKeyBytes;
        this.maxValueBytes = maxValueBytes;
        this.maxConnections = maxConnections;
        this.bindAddress = bindAddress;
        this.handshakeTimeout = handshakeTimeout;
        this.requestTimeout = requestTimeout;
    }

    /** The defaults, with the secret found as {@link StoreSecret#fromEnvironment()} does; no variables read. */
    public static TcpStoreOptions defaults() {
        return new TcpStoreOptions(StoreSecret::fromEnvironment, DEFAULT_MAX_KEY_BYTES, DEFAULT_MAX_VALUE_BYTES,
                DEFAULT_MAX_CONNECTIONS, null, DEFAULT_HANDSHAKE_TIMEOUT, null);
    }

    /** Options from this process's environment variables (see the class comment). */
    public static TcpStoreOptions fromEnvironment() {
        return fromEnvironment(System.getenv());
    }

    /**
     * Options from {@code env}; the secret is still found through the process environment unless
     * {@link #withSecret} replaces it.
     *
     * @throws IllegalStateException naming the variable, if a size or count is malformed or not positive
     */
    public static TcpStoreOptions fromEnvironment(Map<String, String> env) {
        TcpStoreOptions o = defaults();
        String bind = env.get(BIND_ADDR_ENV);
        return new TcpStoreOptions(o.secret,
                size(env, MAX_KEY_BYTES_ENV, DEFAULT_MAX_KEY_BYTES),
                size(env, MAX_VALUE_BYTES_ENV, DEFAULT_MAX_VALUE_BYTES),
                size(env, MAX_CONNECTIONS_ENV, DEFAULT_MAX_CONNECTIONS),
                bind == null || bind.isBlank() ? null : bind.trim(),
                o.handshakeTimeout, o.requestTimeout);
    }

    /** A copy that uses {@code secret} instead of the environment's. */
    public TcpStoreOptions withSecret(StoreSecret secret) {
        Objects.requireNonNull(secret, "secret");
        return new TcpStoreOptions(() -> secret, maxKeyBytes, maxValueBytes, maxConnections, bindAddress,
                handshakeTimeout, requestTimeout);
    }

    /** A copy with other size limits (bytes, each at least 1). */
    public TcpStoreOptions withMaxSizes(int maxKeyBytes, int maxValueBytes) {
        positive(maxKeyBytes, "maxKeyBytes");
        positive(maxValueBytes, "maxValueBytes");
        return new TcpStoreOptions(secret, maxKeyBytes, maxValueBytes, maxConnections, bindAddress, handshakeTimeout,
                requestTimeout);
    }

    /** A copy whose server holds at most {@code maxConnections} connections (at least 1). */
    public TcpStoreOptions withMaxConnections(int maxConnections) {
        positive(maxConnections, "maxConnections");
        return new TcpStoreOptions(secret, maxKeyBytes, maxValueBytes, maxConnections, bindAddress, handshakeTimeout,
                requestTimeout);
    }

    /** A copy whose server listens on {@code address} ("0.0.0.0": every interface; null: the policy of {@link StoreBindAddress}). */
    public TcpStoreOptions withBindAddress(String address) {
        return new TcpStoreOptions(secret, maxKeyBytes, maxValueBytes, maxConnections, address, handshakeTimeout,
                requestTimeout);
    }

    /** A copy whose server drops connections that have not authenticated within {@code timeout} (positive). */
    public TcpStoreOptions withHandshakeTimeout(Duration timeout) {
        if (timeout.isNegative() || timeout.isZero()) {
            throw new IllegalArgumentException("handshake timeout must be positive, got " + timeout);
        }
        return new TcpStoreOptions(secret, maxKeyBytes, maxValueBytes, maxConnections, bindAddress, timeout,
                requestTimeout);
    }

    /**
     * A copy whose client gives up on an answer after {@code timeout} (positive) beyond the time a
     * blocking request asked the server to wait. Default: the store's timeout, at least 5 s.
     */
    public TcpStoreOptions withRequestTimeout(Duration timeout) {
        if (timeout.isNegative() || timeout.isZero()) {
            throw new IllegalArgumentException("request timeout must be positive, got " + timeout);
        }
        return new TcpStoreOptions(secret, maxKeyBytes, maxValueBytes, maxConnections, bindAddress, handshakeTimeout,
                timeout);
    }

    StoreSecret secret() {
        return secret.get();
    }

    public int maxKeyBytes() {
        return maxKeyBytes;
    }

    public int maxValueBytes() {
        return maxValueBytes;
    }

    public int maxConnections() {
        return maxConnections;
    }

    /** The configured listen address, or null for the default policy. */
    public String bindAddress() {
        return bindAddress;
    }

    public Duration handshakeTimeout() {
        return handshakeTimeout;
    }

    /** The configured request timeout, or null for the default (the store's timeout, at least 5 s). */
    public Duration requestTimeout() {
        return requestTimeout;
    }

    private static void positive(int v, String name) {
        if (v < 1) {
            throw new IllegalArgumentException(name + " must be at least 1, got " + v);
        }
    }

    /** Parses a positive size such as {@code 1048576}, {@code 64K}, {@code 16M} or {@code 1G}. */
    static int size(Map<String, String> env, String name, int fallback) {
        String raw = env.get(name);
        if (raw == null || raw.isBlank()) {
            return fallback;
        }
        long v = Setting.parseByteCount(raw);
        if (v < 1 || v > Integer.MAX_VALUE - 8) {
            throw new IllegalStateException(name + "=\"" + raw + "\" is not a positive number below 2G (optionally"
                    + " with a K, M or G suffix); unset it for the default " + fallback);
        }
        return (int) v;
    }
}
