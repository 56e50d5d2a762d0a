package org.ddp4j.distributed.store;

import static org.ddp4j.distributed.store.TcpStoreProtocol.*;
import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.net.BindException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.ddp4j.distributed.DistributedException;

/**
 * The server half of {@link TcpStore}: a listening socket, an accept thread, and one daemon thread
 * per client connection. The keys live in a {@link HashStore}; blocking requests wait on its
 * condition in the connection's own thread, so a waiting client never holds up the others.
 */
final class TcpStoreServer implements AutoCloseable {
    private static final AtomicInteger SERVERS = new AtomicInteger();

    private final ServerSocket serverSocket;
    private final String where;
    private final HashStore state;
    private final Set<Socket> connections = ConcurrentHashMap.newKeySet();
    private final Set<Thread> threads = ConcurrentHashMap.newKeySet();
    private final Thread acceptThread;
    private volatile boolean closed;

    /**
     * Binds {@code host:port} and starts accepting.
     *
     * @throws DistributedException if the port is in use, or the address is not one of this machine's
     */
    TcpStoreServer(String host, int port) {
        InetSocketAddress address = new InetSocketAddress(host, port);
        if (address.isUnresolved()) {
            throw new DistributedException("TcpStore server: cannot resolve host \"" + host
                    + "\"; set --master-addr / MASTER_ADDR to an address of this machine");
        }
        ServerSocket ss = null;
        try {
            ss = new ServerSocket();
            ss.setReuseAddress(true); // allow restarting while old connections sit in TIME_WAIT
            ss.bind(address, 1024);
        } catch (BindException e) {
            StoreSupport.closeQuietly(ss);
            String msg = String.valueOf(e.getMessage());
            if (msg.contains("in use")) {
                throw new DistributedException("TcpStore server: port " + port + " on " + host
                        + " is already in use (another job or a previous run still holds it); choose another"
                        + " --master-port / MASTER_PORT", e);
            }
            throw new DistributedException("TcpStore server: cannot listen on " + host + ":" + port + " (" + msg
                    + "); --master-addr / MASTER_ADDR must be an address of the machine that hosts the store"
                    + " (or 0.0.0.0)", e);
        } catch (IOException e) {
            StoreSupport.closeQuietly(ss);
            throw new DistributedException("TcpStore server: cannot listen on " + host + ":" + port + ": " + e, e);
        }
        this.serverSocket = ss;
        this.where = "TcpStore server at " + host + ":" + ss.getLocalPort();
        this.state = new HashStore(Duration.ZERO, where);
        this.acceptThread = new Thread(this::acceptLoop,
                "ddp4j-tcpstore-" + SERVERS.incrementAndGet() + "-accept-" + ss.getLocalPort());
        acceptThread.setDaemon(true);
        acceptThread.start();
    }

    /** The port actually bound (differs from the requested one when that was 0). */
    int port() {
        return serverSocket.getLocalPort();
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
                continue; // e.g. too many open files; keep serving the connections we have
            }
            connections.add(s);
            if (closed) { // close() may have missed this one
                StoreSupport.closeQuietly(s);
                return;
            }
            Thread t = new Thread(() -> serve(s), acceptThread.getName().replace("accept", "conn-" + (++n)));
            t.setDaemon(true);
            threads.add(t);
            t.start();
        }
    }

    private void serve(Socket socket) {
        try (socket) {
            socket.setTcpNoDelay(true);
            DataInputStream in = new DataInputStream(new BufferedInputStream(socket.getInputStream()));
            DataOutputStream out = new DataOutputStream(new BufferedOutputStream(socket.getOutputStream()));
            socket.setSoTimeout(10_000); // the handshake must come promptly
            if (in.readInt() != MAGIC) {
                return; // not one of ours: drop it without answering
            }
            int version = in.readInt();
            out.writeInt(MAGIC);
            out.writeInt(VERSION);
            out.flush();
            if (version != VERSION) {
                return;
            }
            socket.setSoTimeout(0); // clients may stay idle between calls for as long as they like
            while (!closed) {
                int op;
                try {
                    op = in.readByte();
                } catch (EOFException e) {
                    return; // client closed its end
                }
                handle((byte) op, in, out);
                out.flush();
            }
        } catch (IOException e) {
            // connection reset or the server is closing: nothing to tell anyone
        } finally {
            connections.remove(socket);
            threads.remove(Thread.currentThread());
        }
    }

    private void handle(byte op, DataInputStream in, DataOutputStream out) throws IOException {
        try {
            switch (op) {
                case SET -> {
                    String key = readString(in);
                    byte[] value = readBytes(in);
                    state.set(key, value);
                    out.writeByte(OK);
                }
                case GET -> {
                    String key = readString(in);
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
                    String key = readString(in);
                    long delta = in.readLong();
                    long value = state.add(key, delta);
                    out.writeByte(OK);
                    out.writeLong(value);
                }
                case COMPARE_SET -> {
                    String key = readString(in);
                    byte[] expected = readBytes(in);
                    byte[] desired = readBytes(in);
                    byte[] value = state.compareSet(key, expected, desired);
                    out.writeByte(OK);
                    writeBytes(out, value);
                }
                case WAIT -> {
                    List<String> keys = readStrings(in);
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
                    List<String> keys = readStrings(in);
                    boolean all = state.check(keys);
                    out.writeByte(OK);
                    out.writeBoolean(all);
                }
                case DELETE -> {
                    String key = readString(in);
                    boolean existed = state.deleteKey(key);
                    out.writeByte(OK);
                    out.writeBoolean(existed);
                }
                case NUM_KEYS -> {
                    out.writeByte(OK);
                    out.writeInt(state.numKeys());
                }
                default -> throw new IOException("unknown TcpStore opcode " + op);
            }
        } catch (DistributedException e) {
            // add() on a non-counter, overflow, shutdown: the request was read in full, so answer it.
            out.writeByte(ERROR);
            writeString(out, String.valueOf(e.getMessage()));
        }
    }

    /** Stops accepting, closes every connection, wakes blocked requests, and waits briefly for the threads. */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        StoreSupport.closeQuietly(serverSocket);
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
}
