package org.ddp4j.distributed.store;

import static org.ddp4j.distributed.store.TcpStoreProtocol.*;
import static org.junit.jupiter.api.Assertions.*;
import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.ddp4j.distributed.DistributedTimeoutException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.function.Executable;

/** Every TcpStore call ends by its deadline, whatever the server does (or fails to do). */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class TcpStoreDeadlineTest {
    private static final String HOST = "127.0.0.1";
    private static final StoreSecret SECRET = StoreSecret.of("deadline test".getBytes(StandardCharsets.UTF_8), "test");
    private static final TcpStoreOptions OPTIONS = TcpStoreOptions.defaults().withSecret(SECRET);

    /** Asserts that {@code call} throws a timeout naming {@code what} within [minMs, maxMs]. */
    private static DistributedTimeoutException timesOut(Executable call, long minMs, long maxMs) {
        long t0 = System.nanoTime();
        DistributedTimeoutException e = assertThrows(DistributedTimeoutException.class, call);
        long ms = (System.nanoTime() - t0) / 1_000_000;
        assertTrue(ms >= minMs && ms <= maxMs, "gave up after " + ms + " ms, expected " + minMs + ".." + maxMs + ": "
                + e.getMessage());
        return e;
    }

    @Test
    void aPeerThatAcceptsButNeverAnswersFailsTheConnect() throws Exception {
        try (ServerSocket silent = new ServerSocket(0, 5, InetAddress.getByName(HOST))) {
            int port = silent.getLocalPort();
            // the kernel accepts the connection; nobody reads or answers
            DistributedTimeoutException e = timesOut(() -> TcpStore.client(HOST, port, Duration.ofSeconds(1), OPTIONS),
                    900, 15_000);
            assertEquals("Could not connect to the TcpStore at " + HOST + ":" + port + " within 1000 ms: the store at " + HOST
                    + ":" + port + " accepted the connection but did not answer the handshake within 5000 ms. The store's"
                    + " process (rank 0, or node 0's launcher) may be stopped or hung, or flooded with connections that"
                    + " never authenticate (its log names them), or another program holds that port (check"
                    + " --master-port / MASTER_PORT)", e.getMessage());
        }
    }

    /**
     * A store that closes its first {@code cut} connections as soon as their hello arrives (as a
     * flooded store pushes out a connection), then authenticates and answers one {@code add}.
     */
    private static final class CuttingStore implements AutoCloseable {
        final ServerSocket ss;
        final ExecutorService pool = Executors.newCachedThreadPool();
        final java.util.concurrent.atomic.AtomicInteger accepted = new java.util.concurrent.atomic.AtomicInteger();

        CuttingStore(int cut) throws Exception {
            ss = new ServerSocket(0, 50, InetAddress.getByName(HOST));
            pool.submit(() -> {
                while (true) {
                    Socket s = ss.accept();
                    DataInputStream in = new DataInputStream(new BufferedInputStream(s.getInputStream()));
                    DataOutputStream out = new DataOutputStream(new BufferedOutputStream(s.getOutputStream()));
                    in.readInt(); // the hello has arrived
                    if (accepted.incrementAndGet() <= cut) {
                        s.close();
                        continue;
                    }
                    in.readInt();
                    StoreHandshake.server(in, out, SECRET, new StoreHandshake.Limits(1 << 16, 64 << 20));
                    in.readByte(); // ADD
                    readString(in, 1 << 16, "key", "-");
                    long delta = in.readLong();
                    out.writeByte(OK);
                    out.writeLong(delta);
                    out.flush();
                }
            });
        }

        int port() {
            return ss.getLocalPort();
        }

        @Override
        public void close() throws Exception {
            pool.shutdownNow();
            ss.close();
        }
    }

    @Test
    void aHandshakeTheStoreCutsIsTriedAgain() throws Exception {
        try (CuttingStore store = new CuttingStore(3);
                TcpStore client = TcpStore.client(HOST, store.port(), Duration.ofSeconds(20), OPTIONS)) {
            assertEquals(7, client.add("k", 7));
            assertEquals(4, store.accepted.get());
        }
    }

    @Test
    void aStoreThatCutsEveryHandshakeIsNamedWhenTheClientGivesUp() throws Exception {
        try (CuttingStore store = new CuttingStore(Integer.MAX_VALUE)) {
            DistributedTimeoutException e = timesOut(() -> TcpStore.client(HOST, store.port(), Duration.ofSeconds(1),
                    OPTIONS), 900, 10_000);
            String m = e.getMessage();
            assertTrue(m.startsWith("Could not connect to the TcpStore at " + HOST + ":" + store.port() + " within 1000 ms:"
                    + " the store at " + HOST + ":" + store.port() + " accepted " + store.accepted.get() + " connections"
                    + " but the last time it closed it during the handshake ("), m);
            assertTrue(m.endsWith("). The store's process (rank 0, or node 0's launcher) may be stopped or hung, or"
                    + " flooded with connections that never authenticate (its log names them), or another program"
                    + " holds that port (check --master-port / MASTER_PORT)"), m);
            assertTrue(store.accepted.get() > 1, "never tried again");
        }
    }

    /** A store that authenticates its client, then reads requests and never answers them (a hung master). */
    private static final class MuteStore implements AutoCloseable {
        final ServerSocket ss;
        final ExecutorService pool = Executors.newCachedThreadPool();

        MuteStore(boolean readRequests) throws Exception {
            ss = new ServerSocket(0, 5, InetAddress.getByName(HOST));
            pool.submit(() -> {
                while (true) {
                    Socket s = ss.accept();
                    pool.submit(() -> {
                        DataInputStream in = new DataInputStream(new BufferedInputStream(s.getInputStream()));
                        DataOutputStream out = new DataOutputStream(new BufferedOutputStream(s.getOutputStream()));
                        in.readInt();
                        in.readInt();
                        StoreHandshake.server(in, out, SECRET, new StoreHandshake.Limits(1 << 16, 64 << 20));
                        if (readRequests) {
                            while (in.read() >= 0) {
                                // swallow
                            }
                        } else {
                            Thread.sleep(Long.MAX_VALUE);
                        }
                        return null;
                    });
                }
            });
        }

        int port() {
            return ss.getLocalPort();
        }

        @Override
        public void close() throws Exception {
            pool.shutdownNow();
            ss.close();
        }
    }

    @Test
    void everyRequestToAHungServerEndsByItsDeadline() throws Exception {
        try (MuteStore mute = new MuteStore(true)) {
            TcpStoreOptions o = OPTIONS.withRequestTimeout(Duration.ofMillis(700));
            List<Executable> calls = new ArrayList<>();
            List<String> names = new ArrayList<>();
            for (int i = 0; i < 7; i++) {
                TcpStore c = TcpStore.client(HOST, mute.port(), Duration.ofSeconds(1), o);
                names.add(List.of("set(\"k\")", "add(\"k\")", "compareSet(\"k\")", "check([\"k\"])", "deleteKey(\"k\")",
                        "numKeys()", "get(\"k\")").get(i));
                calls.add(List.<Executable>of(() -> c.set("k", new byte[1]), () -> c.add("k", 1),
                        () -> c.compareSet("k", new byte[0], new byte[1]), () -> c.check(List.of("k")),
                        () -> c.deleteKey("k"), c::numKeys, () -> c.get("k")).get(i));
            }
            for (int i = 0; i < calls.size(); i++) {
                boolean blocking = names.get(i).startsWith("get");
                // a non-blocking request: the request timeout; get: its 1 s wait plus the request timeout
                DistributedTimeoutException e = timesOut(calls.get(i), blocking ? 1_600 : 600, blocking ? 8_000 : 6_000);
                assertEquals("The TcpStore at " + HOST + ":" + mute.port() + " did not answer " + names.get(i)
                        + " within " + (blocking ? 1700 : 700) + " ms: the master (rank 0, or node 0's launcher) may be"
                        + " stopped or hung, or the network to it may be down", e.getMessage());
            }
        }
    }

    @Test
    void aLargeSetToAServerThatStopsReadingEndsByItsDeadline() throws Exception {
        try (MuteStore mute = new MuteStore(false)) {
            TcpStoreOptions o = OPTIONS.withRequestTimeout(Duration.ofMillis(800));
            try (TcpStore c = TcpStore.client(HOST, mute.port(), Duration.ofSeconds(1), o)) {
                // 48 MiB cannot fit the socket buffers: the write itself blocks until the deadline closes the socket
                DistributedTimeoutException e = timesOut(() -> c.set("big", new byte[48 << 20]), 700, 8_000);
                assertTrue(e.getMessage().startsWith("The TcpStore at " + HOST + ":" + mute.port()
                        + " did not answer set(\"big\") within 800 ms"), e.getMessage());
                // the connection is unusable afterwards, and says so at once
                var later = assertThrows(org.ddp4j.distributed.DistributedException.class, () -> c.add("k", 1));
                assertTrue(later.getMessage().contains("is no longer usable (no answer within 800 ms)"),
                        later.getMessage());
            }
        }
    }

    @Test
    void theDefaultRequestDeadlineIsTheStoreTimeoutAtLeastFiveSeconds() throws Exception {
        try (MuteStore mute = new MuteStore(true);
                TcpStore c = TcpStore.client(HOST, mute.port(), Duration.ofMillis(300), OPTIONS)) {
            DistributedTimeoutException e = timesOut(() -> c.add("k", 1), 4_500, 15_000);
            assertTrue(e.getMessage().contains("did not answer add(\"k\") within 5000 ms"), e.getMessage());
        }
    }

    @Test
    void aStoppedStoreProcessEndsEachCallByItsDeadline() throws Exception {
        // The store in a child JVM, stopped with SIGSTOP mid-job as a hung master would be.
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        ProcessBuilder pb = new ProcessBuilder(java, "-Xmx128m", "-XX:TieredStopAtLevel=1", "-cp",
                System.getProperty("java.class.path"), TcpStoreServerMain.class.getName());
        pb.environment().put("DDP4J_STORE_SECRET", "stopped store test");
        pb.redirectErrorStream(true);
        Process p = pb.start();
        try {
            String first = new java.io.BufferedReader(new java.io.InputStreamReader(p.getInputStream())).readLine();
            assertNotNull(first, "the store process printed nothing");
            assertTrue(first.startsWith("port "), first);
            int port = Integer.parseInt(first.substring(5).trim());
            TcpStoreOptions o = TcpStoreOptions.defaults()
                    .withSecret(StoreSecret.of("stopped store test".getBytes(StandardCharsets.UTF_8), "test"));
            try (TcpStore c = TcpStore.client(HOST, port, Duration.ofSeconds(2), o)) {
                c.set("k", "v".getBytes(StandardCharsets.UTF_8));
                new ProcessBuilder("kill", "-STOP", Long.toString(p.pid())).start().waitFor();
                awaitStopped(p.pid());
                DistributedTimeoutException e = timesOut(() -> c.get("k"), 4_000, 15_000);
                assertEquals("The TcpStore at " + HOST + ":" + port + " did not answer get(\"k\") within 7000 ms: the"
                        + " master (rank 0, or node 0's launcher) may be stopped or hung, or the network to it may be"
                        + " down", e.getMessage());
                // a new client gets no further than the handshake
                timesOut(() -> TcpStore.client(HOST, port, Duration.ofSeconds(1), o), 900, 15_000);
            } finally {
                new ProcessBuilder("kill", "-CONT", Long.toString(p.pid())).start().waitFor();
            }
        } finally {
            p.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
        }
    }

    /**
     * Waits until the kernel shows the process stopped (state T in /proc/PID/stat): kill returns
     * once the signal is sent, and a loaded machine may let the store answer one more call first.
     */
    private static void awaitStopped(long pid) throws Exception {
        Path stat = Path.of("/proc", Long.toString(pid), "stat");
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (System.nanoTime() < deadline) {
            String s = java.nio.file.Files.readString(stat);
            if (s.substring(s.lastIndexOf(')') + 2).startsWith("T")) {
                return;
            }
            Thread.sleep(5);
        }
        throw new AssertionError("the store process " + pid + " did not stop within 10 s of SIGSTOP");
    }
}
