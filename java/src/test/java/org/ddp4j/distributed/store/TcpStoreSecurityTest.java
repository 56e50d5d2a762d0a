package org.ddp4j.distributed.store;

import static org.ddp4j.distributed.store.TcpStoreProtocol.*;
import static org.junit.jupiter.api.Assertions.*;
import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import org.ddp4j.distributed.DistributedException;
import org.ddp4j.distributed.DistributedTimeoutException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The TcpStore's defences: authentication, size limits, the connection cap, the listen address. */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class TcpStoreSecurityTest {
    private static final String HOST = "127.0.0.1";
    private static final Duration TIMEOUT = Duration.ofSeconds(10);
    private static final StoreSecret SECRET = StoreSecret.of(b("the job's secret"), "test secret A");
    private static final StoreSecret OTHER = StoreSecret.of(b("another secret"), "test secret B");

    static byte[] b(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    static TcpStoreOptions with(StoreSecret secret) {
        return TcpStoreOptions.defaults().withSecret(secret);
    }

    /** A raw connection to the store, for sending what no TcpStore client would. */
    static final class Raw implements AutoCloseable {
        final Socket socket;
        final DataInputStream in;
        final DataOutputStream out;

        Raw(int port) throws IOException {
            socket = new Socket(HOST, port);
            socket.setSoTimeout(10_000);
            in = new DataInputStream(new BufferedInputStream(socket.getInputStream()));
            out = new DataOutputStream(new BufferedOutputStream(socket.getOutputStream()));
        }

        /** Authenticates as a real client would. */
        Raw authenticated(StoreSecret secret) throws IOException {
            StoreHandshake.client(in, out, secret, HOST + ":" + socket.getPort());
            return this;
        }

        /** Whether the server closed the connection (end of stream, or reset) within 10 s. */
        boolean closedByServer() {
            try {
                return in.read() < 0;
            } catch (IOException e) {
                return !(e instanceof java.net.SocketTimeoutException);
            }
        }

        @Override
        public void close() {
            StoreSupport.closeQuietly(socket);
        }
    }

    /** Waits up to 10 s for a refusal line that matches. */
    static String awaitRefusal(TcpStoreServer server, Predicate<String> match) throws InterruptedException {
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (System.nanoTime() < end) {
            for (String line : server.refusals()) {
                if (match.test(line)) {
                    return line;
                }
            }
            Thread.sleep(10);
        }
        fail("no refusal matched; logged: " + server.refusals());
        return null;
    }

    /** Waits up to 10 s for the server to count {@code n} authenticated connections. */
    static void awaitAuthenticated(TcpStoreServer server, int n) throws InterruptedException {
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (server.authenticatedConnections() != n) {
            assertTrue(System.nanoTime() < end, "authenticated connections: " + server.authenticatedConnections()
                    + ", expected " + n);
            Thread.sleep(5);
        }
    }

    @Test
    void clientsThatShareTheSecretWork() {
        try (TcpStore server = TcpStore.server(HOST, 0, TIMEOUT, with(SECRET));
                TcpStore client = TcpStore.client(HOST, server.port(), TIMEOUT,
                        with(StoreSecret.of(b("the job's secret"), "copy")))) {
            client.set("k", b("v"));
            assertEquals("v", new String(server.get("k"), StandardCharsets.UTF_8));
            assertEquals(3, client.add("n", 3));
            assertTrue(server.serverForTests().refusals().isEmpty(), server.serverForTests().refusals().toString());
        }
    }

    @Test
    void aClientWithAnotherSecretIsRefusedOnBothSidesWithTheFix() throws Exception {
        try (TcpStore server = TcpStore.server(HOST, 0, TIMEOUT, with(SECRET))) {
            long t0 = System.nanoTime();
            DistributedException e = assertThrows(DistributedException.class,
                    () -> TcpStore.client(HOST, server.port(), TIMEOUT, with(OTHER)));
            assertTrue(System.nanoTime() - t0 < TimeUnit.SECONDS.toNanos(5), "a wrong secret was retried");
            assertFalse(e instanceof DistributedTimeoutException, e.toString());
            assertEquals("The TcpStore at " + HOST + ":" + server.port() + " refused this process's store secret (wrong"
                    + " secret): this host and the store's host have different secrets (this one read it from test"
                    + " secret B). " + StoreHandshake.howToShare(), e.getMessage());
            assertTrue(e.getMessage().contains("set DDP4J_STORE_SECRET to the same value on every host, or"
                    + " DDP4J_STORE_SECRET_FILE to a file with the same contents, or copy ~/.ddp4j/store-secret"),
                    e.getMessage());
            String line = awaitRefusal(server.serverForTests(), l -> l.contains("does not know this store's secret"));
            assertTrue(line.startsWith("TcpStore server at " + HOST + ":" + server.port()
                    + ": refused a connection from /127.0.0.1:"), line);
            server.set("still", b("serving"));
        }
    }

    @Test
    void aServerThatCannotProveTheSecretIsRefusedByTheClient() throws Exception {
        // A stranger posing as the store: it speaks the protocol, accepts any proof, and signs with its own secret.
        try (ServerSocket fake = new ServerSocket(0, 5, InetAddress.getByName(HOST))) {
            ExecutorService pool = Executors.newSingleThreadExecutor();
            try {
                Future<?> f = pool.submit(() -> {
                    try (Socket s = fake.accept()) {
                        DataInputStream in = new DataInputStream(s.getInputStream());
                        DataOutputStream out = new DataOutputStream(s.getOutputStream());
                        in.readInt();
                        in.readInt();
                        byte[] nonce = new byte[NONCE_BYTES];
                        in.readFully(nonce);
                        out.writeInt(MAGIC);
                        out.writeInt(VERSION);
                        out.writeByte(OK);
                        out.write(new byte[NONCE_BYTES]);
                        in.readFully(new byte[NONCE_BYTES]); // the client's proof, unchecked
                        out.writeByte(OK);
                        out.write(OTHER.hmac(SERVER_LABEL, nonce, new byte[NONCE_BYTES]));
                        out.writeInt(1 << 16);
                        out.writeInt(1 << 20);
                        out.flush();
                        in.read(); // until the client hangs up
                    }
                    return null;
                });
                DistributedException e = assertThrows(DistributedException.class,
                        () -> TcpStore.client(HOST, fake.getLocalPort(), TIMEOUT, with(SECRET)));
                assertEquals("The service at " + HOST + ":" + fake.getLocalPort() + " answered as a ddp4j TcpStore but"
                        + " could not prove that it knows this process's store secret (read from test secret A): it is"
                        + " not this job's store, or its host has a different secret. " + StoreHandshake.howToShare(),
                        e.getMessage());
                f.get(10, TimeUnit.SECONDS);
            } finally {
                pool.shutdownNow();
            }
        }
    }

    @Test
    void requestsWithoutTheHandshakeAreRefusedAndLogged() throws Exception {
        try (TcpStore server = TcpStore.server(HOST, 0, TIMEOUT, with(SECRET))) {
            // A client of the unauthenticated protocol: a SET straight away.
            try (Raw raw = new Raw(server.port())) {
                raw.out.writeByte(SET);
                writeString(raw.out, "ddp4j/failed");
                writeBytes(raw.out, b("stop the job"));
                raw.out.flush();
                assertTrue(raw.closedByServer());
            }
            String line = awaitRefusal(server.serverForTests(), l -> l.contains("without the TcpStore handshake"));
            assertTrue(line.matches("TcpStore server at 127\\.0\\.0\\.1:\\d+: refused a connection from /127\\.0\\.0\\.1:\\d+:"
                    + " it sent a request without the TcpStore handshake \\(no secret; first bytes 0x01000000\\)"), line);
            // The hello, then a proof that is not one: refused like a wrong secret.
            try (Raw raw = new Raw(server.port())) {
                raw.out.writeInt(MAGIC);
                raw.out.writeInt(VERSION);
                raw.out.write(new byte[NONCE_BYTES]);
                raw.out.flush();
                assertEquals(MAGIC, raw.in.readInt());
                assertEquals(VERSION, raw.in.readInt());
                assertEquals(OK, raw.in.readByte());
                raw.in.readFully(new byte[NONCE_BYTES]);
                raw.out.write(new byte[NONCE_BYTES]);
                raw.out.flush();
                assertEquals(ERROR, raw.in.readByte());
                assertEquals("wrong secret", readString(raw.in));
                assertTrue(raw.closedByServer());
            }
            assertFalse(server.check(List.of("ddp4j/failed")), "an unauthenticated SET was applied");
            assertEquals(0, server.numKeys());
        }
    }

    @Test
    void aConnectionThatNeverAuthenticatesIsDropped() throws Exception {
        TcpStoreOptions o = with(SECRET).withHandshakeTimeout(Duration.ofMillis(300));
        try (TcpStore server = TcpStore.server(HOST, 0, TIMEOUT, o); Raw raw = new Raw(server.port())) {
            raw.out.writeInt(MAGIC); // then nothing
            raw.out.flush();
            long t0 = System.nanoTime();
            assertTrue(raw.closedByServer());
            assertTrue(System.nanoTime() - t0 < TimeUnit.SECONDS.toNanos(8));
            awaitRefusal(server.serverForTests(), l -> l.endsWith("it did not complete the handshake within 300 ms"));
        }
    }

    private static long usedHeapAfterGc() {
        for (int i = 0; i < 3; i++) {
            System.gc();
        }
        return ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
    }

    @Test
    void hugeAnnouncedLengthsCloseTheConnectionWithoutAllocating() throws Exception {
        try (TcpStore server = TcpStore.server(HOST, 0, TIMEOUT, with(SECRET));
                TcpStore other = TcpStore.client(HOST, server.port(), TIMEOUT, with(SECRET))) {
            long before = usedHeapAfterGc();
            // Eight authenticated connections at once, each announcing a 1 GiB key and sending nothing more.
            List<Raw> raws = new ArrayList<>();
            try {
                for (int i = 0; i < 8; i++) {
                    Raw raw = new Raw(server.port()).authenticated(SECRET);
                    raw.out.writeByte(SET);
                    raw.out.writeInt(1 << 30);
                    raw.out.flush();
                    raws.add(raw);
                }
                for (Raw raw : raws) {
                    assertTrue(raw.closedByServer());
                }
            } finally {
                raws.forEach(Raw::close);
            }
            long grown = usedHeapAfterGc() - before;
            assertTrue(grown < 256L << 20, "the server's heap grew by " + grown + " bytes");
            String line = awaitRefusal(server.serverForTests(), l -> l.contains("announced a key"));
            assertTrue(line.endsWith(": it announced a key of 1073741824 bytes, more than DDP4J_STORE_MAX_KEY_BYTES=65536"),
                    line);
            // a value just above the limit, a negative length, an unknown opcode
            try (Raw raw = new Raw(server.port()).authenticated(SECRET)) {
                raw.out.writeByte(SET);
                writeString(raw.out, "k");
                raw.out.writeInt(TcpStoreOptions.DEFAULT_MAX_VALUE_BYTES + 1);
                raw.out.flush();
                assertTrue(raw.closedByServer());
            }
            awaitRefusal(server.serverForTests(), l -> l.endsWith("it announced a value of 16777217 bytes, more than"
                    + " DDP4J_STORE_MAX_VALUE_BYTES=16777216"));
            try (Raw raw = new Raw(server.port()).authenticated(SECRET)) {
                raw.out.writeByte(GET);
                raw.out.writeInt(-5);
                raw.out.flush();
                assertTrue(raw.closedByServer());
            }
            awaitRefusal(server.serverForTests(), l -> l.endsWith("it announced a key of negative length -5"));
            try (Raw raw = new Raw(server.port()).authenticated(SECRET)) {
                raw.out.writeByte(99);
                raw.out.flush();
                assertTrue(raw.closedByServer());
            }
            awaitRefusal(server.serverForTests(), l -> l.endsWith("it sent an unknown request (opcode 99)"));
            try (Raw raw = new Raw(server.port()).authenticated(SECRET)) {
                raw.out.writeByte(WAIT);
                raw.out.writeInt(Integer.MAX_VALUE);
                raw.out.flush();
                assertTrue(raw.closedByServer());
            }
            awaitRefusal(server.serverForTests(), l -> l.contains("it announced a list of 2147483647 keys"));
            // the store went on serving
            other.set("k", b("v"));
            assertEquals("v", new String(server.get("k"), StandardCharsets.UTF_8));
        }
    }

    @Test
    void aValueAnnouncedWithinTheLimitButNotSentCostsOnlyWhatArrives() throws Exception {
        TcpStoreOptions o = with(SECRET).withMaxSizes(1 << 16, 512 << 20);
        try (TcpStore server = TcpStore.server(HOST, 0, TIMEOUT, o)) {
            long before = usedHeapAfterGc();
            List<Raw> raws = new ArrayList<>();
            try {
                for (int i = 0; i < 4; i++) { // 4 x 500 MiB announced, 1 KiB sent
                    Raw raw = new Raw(server.port()).authenticated(SECRET);
                    raw.out.writeByte(SET);
                    writeString(raw.out, "big" + i);
                    raw.out.writeInt(500 << 20);
                    raw.out.write(new byte[1024]);
                    raw.out.flush();
                    raws.add(raw);
                }
                Thread.sleep(300);
                long grown = usedHeapAfterGc() - before;
                assertTrue(grown < 64L << 20, "the server's heap grew by " + grown + " bytes");
            } finally {
                raws.forEach(Raw::close);
            }
            assertEquals(0, server.numKeys());
        }
    }

    @Test
    void theClientRefusesWhatTheServerWouldRejectBeforeSending() {
        TcpStoreOptions o = with(SECRET).withMaxSizes(16, 100);
        try (TcpStore server = TcpStore.server(HOST, 0, TIMEOUT, o);
                TcpStore client = TcpStore.client(HOST, server.port(), TIMEOUT, with(SECRET))) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> client.set("k", new byte[101]));
            assertEquals("TcpStore set(\"k\"): the value is 101 bytes, more than the 100 the TcpStore at " + HOST + ":"
                    + server.port() + " accepts (DDP4J_STORE_MAX_VALUE_BYTES on the store's host)", e.getMessage());
            IllegalArgumentException k = assertThrows(IllegalArgumentException.class,
                    () -> client.get("a key of more than sixteen bytes"));
            assertTrue(k.getMessage().contains("the key is 32 bytes, more than the 16"), k.getMessage());
            client.set("k", new byte[100]); // the connection is still fine
            assertEquals(100, client.get("k").length);
        }
    }

    @Test
    void connectionsBeyondTheCapAreRefusedWhileExistingClientsWork() throws Exception {
        TcpStoreOptions o = with(SECRET).withMaxConnections(4);
        try (TcpStore server = TcpStore.server(HOST, 0, TIMEOUT, o);
                TcpStore a = TcpStore.client(HOST, server.port(), TIMEOUT, with(SECRET));
                TcpStore b = TcpStore.client(HOST, server.port(), TIMEOUT, with(SECRET));
                TcpStore c = TcpStore.client(HOST, server.port(), TIMEOUT, with(SECRET))) {
            awaitAuthenticated(server.serverForTests(), 4); // the server counts each just after its client is in
            a.set("x", b("1"));
            // a real client over the cap learns why
            DistributedTimeoutException e = assertThrows(DistributedTimeoutException.class,
                    () -> TcpStore.client(HOST, server.port(), Duration.ofMillis(500), with(SECRET)));
            assertTrue(e.getMessage().contains("The TcpStore at " + HOST + ":" + server.port() + " refused the"
                    + " connection: it already serves 4 connections, its limit (DDP4J_STORE_MAX_CONNECTIONS=4 on the"
                    + " store's host)"), e.getMessage());
            String line = awaitRefusal(server.serverForTests(), l -> l.contains("already serves 4 connections"));
            assertTrue(line.endsWith(": it already serves 4 connections, its limit (DDP4J_STORE_MAX_CONNECTIONS=4"
                    + " on the store's host): raise it there if the job needs more"), line);
            assertEquals("1", new String(b.get("x"), StandardCharsets.UTF_8));
            c.close();
            // once one leaves, a new client gets in again
            long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (server.serverForTests().authenticatedConnections() > 3 && System.nanoTime() < end) {
                Thread.sleep(10);
            }
            try (TcpStore d = TcpStore.client(HOST, server.port(), TIMEOUT, with(SECRET))) {
                assertEquals("1", new String(d.get("x"), StandardCharsets.UTF_8));
            }
        }
    }

    @Test
    void silentConnectionsCannotTakeTheLastSlotFromARealClient() throws Exception {
        // Three of four slots are taken by real clients; fifty connections that never speak compete for the last one.
        TcpStoreOptions o = with(SECRET).withMaxConnections(4);
        try (TcpStore server = TcpStore.server(HOST, 0, TIMEOUT, o);
                TcpStore a = TcpStore.client(HOST, server.port(), TIMEOUT, with(SECRET));
                TcpStore b = TcpStore.client(HOST, server.port(), TIMEOUT, with(SECRET))) {
            // the server counts b once its serving thread has read b's handshake, which can be after b returns
            awaitAuthenticated(server.serverForTests(), 3);
            List<Socket> flood = new ArrayList<>();
            try {
                for (int i = 0; i < 50; i++) {
                    Socket s = new Socket();
                    s.connect(new InetSocketAddress(HOST, server.port()), 5000);
                    flood.add(s);
                }
                String line = awaitRefusal(server.serverForTests(), l -> l.contains("it had not begun the handshake"));
                assertTrue(line.contains(": dropped a connection from /127.0.0.1:"), line);
                assertTrue(line.endsWith("it had not begun the handshake when a new connection came, and at most 1 may"
                        + " be in their handshake at once (a flood of connections that never authenticate?)"), line);
                // the silent ones made room: a real client gets the last slot at once
                try (TcpStore c = TcpStore.client(HOST, server.port(), TIMEOUT, with(SECRET))) {
                    c.set("x", b("1"));
                    assertEquals("1", new String(a.get("x"), StandardCharsets.UTF_8));
                    awaitAuthenticated(server.serverForTests(), 4);
                }
            } finally {
                flood.forEach(StoreSupport::closeQuietly);
            }
        }
    }

    @Test
    void theServerListensOnTheMasterAddressOnly() throws Exception {
        try (TcpStore server = TcpStore.server(HOST, 0, TIMEOUT, with(SECRET))) {
            assertEquals(InetAddress.getByName(HOST), server.serverForTests().boundAddress());
        }
        try (TcpStore server = TcpStore.server(HOST, 0, TIMEOUT, with(SECRET).withBindAddress("0.0.0.0"))) {
            assertTrue(server.serverForTests().boundAddress().isAnyLocalAddress());
            try (TcpStore c = TcpStore.client(HOST, server.port(), TIMEOUT, with(SECRET))) {
                c.set("k", b("v"));
            }
        }
        assertEquals("10.1.2.3", StoreBindAddress.choose("10.1.2.3", null));
        assertEquals("localhost", StoreBindAddress.choose("localhost", null));
        assertEquals("0.0.0.0", StoreBindAddress.choose("10.1.2.3", "0.0.0.0"));
    }

    @Test
    void aHostNameThatResolvesToLoopbackListensEverywhere() throws Exception {
        String name = java.nio.file.Files.readString(java.nio.file.Path.of("/proc/sys/kernel/hostname")).trim();
        org.junit.jupiter.api.Assumptions.assumeTrue(!name.equals("localhost")
                && InetAddress.getByName(name).isLoopbackAddress(), "this host's name does not resolve to loopback");
        assertEquals("0.0.0.0", StoreBindAddress.choose(name, null));
        try (TcpStore server = TcpStore.server(name, 0, TIMEOUT, with(SECRET));
                TcpStore c = TcpStore.client(name, server.port(), TIMEOUT, with(SECRET))) {
            assertTrue(server.serverForTests().boundAddress().isAnyLocalAddress());
            c.set("k", b("v"));
            assertEquals("v", new String(server.get("k"), StandardCharsets.UTF_8));
        }
    }
}
