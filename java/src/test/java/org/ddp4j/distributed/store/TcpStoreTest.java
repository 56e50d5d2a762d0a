package org.ddp4j.distributed.store;

import static org.junit.jupiter.api.Assertions.*;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.ddp4j.distributed.DistributedException;
import org.ddp4j.distributed.DistributedTimeoutException;
import org.junit.jupiter.api.Test;

class TcpStoreTest extends StoreContract {
    private static final String HOST = "127.0.0.1";

    /** A server on an ephemeral port plus four separate client connections (the server's own is unused). */
    @Override
    protected List<Store> openClients(Duration timeout) {
        TcpStore server = TcpStore.server(HOST, 0, timeout);
        List<Store> stores = new ArrayList<>();
        stores.add(server);
        for (int i = 1; i < CLIENTS; i++) {
            stores.add(TcpStore.client(HOST, server.port(), timeout));
        }
        return stores;
    }

    @Override
    protected String storeName() {
        return "TcpStore at " + HOST + ":";
    }

    private static int freePort() throws Exception {
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getByName(HOST))) {
            return s.getLocalPort();
        }
    }

    @Test
    void serverReportsItsEphemeralPort() {
        try (TcpStore server = new TcpStore(HOST, 0, true, SHORT)) {
            assertTrue(server.port() > 0);
            assertTrue(server.isServer());
            assertEquals(HOST, server.host());
            try (TcpStore client = new TcpStore(HOST, server.port(), false, SHORT)) {
                assertFalse(client.isServer());
                assertEquals(server.port(), client.port());
                client.set("a", b("1"));
                assertEquals(1, server.numKeys());
            }
        }
    }

    @Test
    void portInUseIsExplained() {
        try (TcpStore first = TcpStore.server(HOST, 0, SHORT)) {
            int port = first.port();
            DistributedException e =
                    assertThrows(DistributedException.class, () -> TcpStore.server(HOST, port, SHORT));
            assertEquals("TcpStore server: port " + port + " on " + HOST + " is already in use (another job or a"
                    + " previous run still holds it); choose another --master-port / MASTER_PORT", e.getMessage());
            // the first server is unaffected
            first.set("k", b("v"));
            assertEquals("v", s(first.get("k")));
        }
    }

    @Test
    void clientThatCannotConnectTimesOutNamingTheAddress() throws Exception {
        int port = freePort();
        long t0 = System.nanoTime();
        DistributedTimeoutException e =
                assertThrows(DistributedTimeoutException.class, () -> TcpStore.client(HOST, port, SHORT));
        long ms = (System.nanoTime() - t0) / 1_000_000;
        assertTrue(ms >= 250 && ms < 5_000, "gave up after " + ms + " ms for a 300 ms timeout");
        assertTrue(e.getMessage().contains(HOST + ":" + port), e.getMessage());
        assertTrue(e.getMessage().contains("the master (rank 0, or node 0's launcher) may not be up"), e.getMessage());
    }

    @Test
    void clientStartedBeforeTheServerConnectsWhenItComesUp() throws Exception {
        int port = freePort();
        Future<String> client = async(() -> {
            try (TcpStore c = TcpStore.client(HOST, port, LONG)) {
                return s(c.get("hello"));
            }
        });
        Thread.sleep(300);
        assertFalse(client.isDone());
        try (TcpStore server = TcpStore.server(HOST, port, LONG)) {
            server.set("hello", b("world"));
            assertEquals("world", client.get(10, TimeUnit.SECONDS));
        }
    }

    @Test
    void blockedGetDoesNotHoldUpOtherClients() throws Exception {
        try (TcpStore server = TcpStore.server(HOST, 0, LONG);
                TcpStore waiter = TcpStore.client(HOST, server.port(), LONG);
                TcpStore other = TcpStore.client(HOST, server.port(), LONG)) {
            Future<String> blocked = async(() -> s(waiter.get("slow")));
            assertStillRunning(blocked);
            long t0 = System.nanoTime();
            for (int i = 0; i < 50; i++) {
                other.add("busy", 1);
            }
            other.set("x", b("y"));
            assertEquals("y", s(server.get("x")));
            long ms = (System.nanoTime() - t0) / 1_000_000;
            assertTrue(ms < 3_000, "other clients were held up for " + ms + " ms");
            assertFalse(blocked.isDone());
            other.set("slow", b("done"));
            assertEquals("done", blocked.get(5, TimeUnit.SECONDS));
        }
    }

    @Test
    void lostServerConnectionIsReportedWithTheAddress() throws Exception {
        TcpStore server = TcpStore.server(HOST, 0, LONG);
        int port = server.port();
        try (TcpStore client = TcpStore.client(HOST, port, LONG);
                TcpStore blockedClient = TcpStore.client(HOST, port, LONG)) {
            client.set("k", b("v"));
            Future<byte[]> blocked = async(() -> blockedClient.get("never"));
            assertStillRunning(blocked);
            server.close();
            // a call blocked in the server fails promptly instead of waiting out its timeout
            Exception e1 = assertThrows(Exception.class, () -> blocked.get(5, TimeUnit.SECONDS));
            assertInstanceOf(DistributedException.class, e1.getCause());
            assertFalse(e1.getCause() instanceof DistributedTimeoutException, e1.getCause().toString());
            assertTrue(e1.getCause().getMessage().contains(HOST + ":" + port), e1.getCause().getMessage());
            // a later call on an idle client fails too, naming the address
            DistributedException e2 = assertThrows(DistributedException.class, () -> client.get("k"));
            assertFalse(e2 instanceof DistributedTimeoutException, e2.toString());
            assertTrue(e2.getMessage().contains(HOST + ":" + port), e2.getMessage());
            assertTrue(e2.getMessage().contains("Lost the connection"), e2.getMessage());
        }
    }

    @Test
    void closeReleasesThePortAndStopsTheThreads() throws Exception {
        int port;
        try (TcpStore server = TcpStore.server(HOST, 0, SHORT)) {
            port = server.port();
            try (TcpStore c = TcpStore.client(HOST, port, SHORT)) {
                c.set("a", b("1"));
            }
        }
        Thread.sleep(50);
        for (Thread t : Thread.getAllStackTraces().keySet()) {
            if (t.getName().startsWith("ddp4j-tcpstore-") && t.getName().endsWith("-accept-" + port)) {
                fail("accept thread still alive after close: " + t.getName());
            }
        }
        // the same port can be bound again at once, and the new store starts empty
        try (TcpStore again = TcpStore.server(HOST, port, SHORT)) {
            assertFalse(again.check(List.of("a")));
        }
        TcpStore closed = TcpStore.server(HOST, 0, SHORT);
        closed.close();
        closed.close(); // idempotent
        DistributedException e = assertThrows(DistributedException.class, () -> closed.set("a", b("1")));
        assertTrue(e.getMessage().contains("closed"), e.getMessage());
    }

    @Test
    void wildcardServerIsReachableThroughLoopback() {
        try (TcpStore server = TcpStore.server("0.0.0.0", 0, SHORT);
                TcpStore client = TcpStore.client(HOST, server.port(), SHORT)) {
            server.set("k", b("v"));
            assertEquals("v", s(client.get("k")));
        }
    }

    @Test
    void anotherProgramOnThePortIsReported() throws Exception {
        try (ServerSocket foreign = new ServerSocket(0, 5, InetAddress.getByName(HOST))) {
            Future<?> acceptor = async(() -> {
                try (Socket s = foreign.accept()) {
                    s.getOutputStream().write("HTTP/1.0 400 Bad Request\r\n\r\n".getBytes());
                }
                return null;
            });
            DistributedException e = assertThrows(DistributedException.class,
                    () -> TcpStore.client(HOST, foreign.getLocalPort(), LONG));
            assertFalse(e instanceof DistributedTimeoutException, e.toString());
            assertTrue(e.getMessage().contains("not a ddp4j TcpStore"), e.getMessage());
            acceptor.get(5, TimeUnit.SECONDS);
        }
    }

    @Test
    void badArgumentsAreRejected() {
        assertThrows(IllegalArgumentException.class, () -> TcpStore.client(HOST, 0, SHORT));
        assertThrows(IllegalArgumentException.class, () -> TcpStore.server(HOST, 70000, SHORT));
        assertThrows(IllegalArgumentException.class, () -> TcpStore.server(HOST, 0, Duration.ofSeconds(-1)));
    }
}
