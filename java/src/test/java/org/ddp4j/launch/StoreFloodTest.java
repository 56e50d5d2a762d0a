package org.ddp4j.launch;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.SocketChannel;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.ddp4j.testing.LauncherProcess;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A two-node job starts while node 0's store is flooded with connections that never authenticate
 * (issue 19: about 1100 half-open connections, re-opened as fast as they are closed, kept a job
 * from starting, and the joining node gave up at once blaming "another program").
 */
@Timeout(value = 200, unit = TimeUnit.SECONDS) // backstop; the job itself takes seconds
class StoreFloodTest {
    private static final String HOST = "127.0.0.1";
    /** More than the store's default cap of 1024 connections. */
    private static final int FLOOD = 1100;
    /** The flood re-opens what the store closes at once, but at most this many a second, so the test stays bounded. */
    private static final int MAX_REOPEN_PER_SECOND = 2000;

    /**
     * Holds {@code n} connections to localhost:port that never send a byte; every one the server
     * closes is opened again. One thread, non-blocking channels; {@link #close()} ends it all.
     */
    static final class Flood implements AutoCloseable {
        private final int port;
        private final Selector selector;
        private final Thread thread;
        private final AtomicInteger held = new AtomicInteger();
        private final AtomicInteger reopened = new AtomicInteger();
        private volatile boolean stop;
        private volatile Exception failure;
        private int maxHeld;

        Flood(int port, int n) throws IOException {
            this.port = port;
            this.selector = Selector.open();
            this.thread = new Thread(() -> run(n), "store-flood");
            thread.setDaemon(true);
            thread.start();
        }

        private void open() throws IOException {
            SocketChannel c = SocketChannel.open();
            c.configureBlocking(false);
            if (c.connect(new InetSocketAddress(HOST, port))) {
                c.register(selector, SelectionKey.OP_READ);
                held.incrementAndGet();
            } else {
                c.register(selector, SelectionKey.OP_CONNECT);
            }
        }

        private void run(int n) {
            ByteBuffer sink = ByteBuffer.allocate(4096);
            int owed = 0; // connections the store closed, to open again
            long windowStart = System.nanoTime();
            int inWindow = 0;
            try {
                for (int i = 0; i < n; i++) {
                    open();
                }
                while (!stop) {
                    long now = System.nanoTime();
                    if (now - windowStart > 1_000_000_000L) {
                        windowStart = now;
                        inWindow = 0;
                    }
                    while (owed > 0 && inWindow < MAX_REOPEN_PER_SECOND) {
                        open();
                        owed--;
                        inWindow++;
                    }
                    selector.select(20);
                    for (SelectionKey k : selector.selectedKeys()) {
                        SocketChannel c = (SocketChannel) k.channel();
                        boolean connecting = k.isValid() && k.isConnectable();
                        boolean lost;
                        try {
                            if (connecting) {
                                c.finishConnect();
                                k.interestOps(SelectionKey.OP_READ);
                                held.incrementAndGet();
                                lost = false;
                            } else {
                                sink.clear();
                                lost = c.read(sink) < 0; // the store sent a refusal, or closed it
                                if (lost) {
                                    held.decrementAndGet();
                                }
                            }
                        } catch (IOException e) {
                            lost = true; // refused or reset
                            if (!connecting) {
                                held.decrementAndGet();
                            }
                        }
                        if (lost) {
                            k.cancel();
                            c.close();
                            owed++;
                            reopened.incrementAndGet();
                        }
                    }
                    selector.selectedKeys().clear();
                    synchronized (this) {
                        maxHeld = Math.max(maxHeld, held.get());
                    }
                }
            } catch (IOException | RuntimeException e) {
                failure = e;
            } finally {
                for (SelectionKey k : selector.keys()) {
                    try {
                        k.channel().close();
                    } catch (IOException ignored) {
                        // closing anyway
                    }
                }
                try {
                    selector.close();
                } catch (IOException ignored) {
                    // closing anyway
                }
            }
        }

        /** The most connections held open at once so far. */
        synchronized int maxHeld() {
            return maxHeld;
        }

        int reopened() {
            return reopened.get();
        }

        /** Whether the flood still runs (it ends only on {@link #close()} or an error of its own). */
        boolean running() {
            return thread.isAlive() && failure == null;
        }

        Exception failure() {
            return failure;
        }

        @Override
        public void close() throws InterruptedException {
            stop = true;
            thread.join(10_000);
        }
    }

    private static void awaitListening(int port) throws Exception {
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (true) {
            try (Socket s = new Socket()) {
                s.connect(new InetSocketAddress(HOST, port), 1000);
                return;
            } catch (IOException e) {
                assertTrue(System.nanoTime() < end, "node 0's store never listened on " + port);
                Thread.sleep(50);
            }
        }
    }

    @Test
    void aTwoNodeJobStartsWhileTheStoreIsFlooded() throws Exception {
        int port = LauncherProcess.freePort();
        List<Process> nodes = new ArrayList<>();
        try {
            nodes.add(LauncherProcess.start("--nnodes", "2", "--node-rank", "0", "--nproc-per-node", "1",
                    "--master-addr", HOST, "--master-port", Integer.toString(port), "org.ddp4j.distributed.CollectiveCheckMain"));
            awaitListening(port);
            try (Flood flood = new Flood(port, FLOOD)) {
                long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
                while (flood.maxHeld() < 1000 && System.nanoTime() < end) {
                    Thread.sleep(20);
                }
                assertTrue(flood.maxHeld() >= 1000, "the flood held only " + flood.maxHeld() + " connections");
                // The joining node, its worker and node 0's worker all connect through the flood.
                nodes.add(LauncherProcess.start("--nnodes", "2", "--node-rank", "1", "--nproc-per-node", "1",
                        "--master-addr", HOST, "--master-port", Integer.toString(port),
                        "org.ddp4j.distributed.CollectiveCheckMain"));
                List<String> all = new ArrayList<>();
                for (Process p : nodes) {
                    LauncherProcess.Result r = LauncherProcess.finish(p);
                    assertEquals(0, r.exitCode(), r.text());
                    all.addAll(r.lines());
                }
                for (int rank = 0; rank < 2; rank++) {
                    String expected = "allreduce ok rank=" + rank + " sum=3";
                    assertTrue(all.stream().anyMatch(l -> l.endsWith(expected)), "missing '" + expected + "' in\n"
                            + String.join("\n", all));
                }
                assertTrue(flood.running(), "the flood stopped early: " + flood.failure());
                assertTrue(flood.reopened() > 0, "the store never closed a flood connection");
            }
        } finally {
            nodes.forEach(LauncherProcess::kill);
        }
    }
}
