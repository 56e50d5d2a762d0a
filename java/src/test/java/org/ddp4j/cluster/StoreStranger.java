package org.ddp4j.cluster;

import java.io.DataOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import java.util.TreeMap;
import org.ddp4j.distributed.store.TcpStore;

/**
 * A stranger on the cluster's network, run in a host of its own against a job's store:
 *
 * <ul>
 *   <li>{@code intrude HOST PORT}: connects as a TcpStore client with whatever secret its
 *       environment gives it (the test sets a different {@code DDP4J_STORE_SECRET}) and writes the
 *       key that tells every launcher of attempt 0 that a worker failed. Prints "stranger: refused: ..."
 *       and exits 0 when the store turns it away, prints "stranger: got in ..." and exits 3 when
 *       the write went through.
 *   <li>{@code flood HOST PORT N}: opens N raw connections and holds them open for a while, each
 *       announcing 1 GiB that never comes: the even ones as the attack did (protocol 1's
 *       handshake, then a SET whose key is 1 GiB long), the odd ones in the store's current
 *       protocol (its magic and version and a nonce, then 32 bytes that start with a 1 GiB
 *       length where the HMAC proof belongs). Prints what the store did with each connection; exits 0.
 * </ul>
 */
public final class StoreStranger {
    private StoreStranger() {}

    /** TcpStoreProtocol's handshake magic, "DDP4"; protocol 1's SET opcode. */
    private static final int MAGIC = 0x44445034;
    private static final byte SET = 1;
    private static final int ONE_GIB = 1 << 30;
    private static final int NONCE_BYTES = 32;

    public static void main(String[] args) throws Exception {
        String mode = args[0];
        String host = args[1];
        int port = Integer.parseInt(args[2]);
        if (mode.equals("intrude")) {
            System.exit(intrude(host, port));
        } else if (mode.equals("flood")) {
            flood(host, port, Integer.parseInt(args[3]));
            System.exit(0);
        } else {
            System.err.println("usage: StoreStranger intrude HOST PORT | flood HOST PORT N");
            System.exit(2);
        }
    }

    private static int intrude(String host, int port) {
        try (TcpStore store = TcpStore.client(host, port, Duration.ofSeconds(10))) {
            store.set("ddp4j/attempt/0/failed", "a stranger wrote this".getBytes(StandardCharsets.UTF_8));
            System.out.println("stranger: got in and wrote ddp4j/attempt/0/failed");
            return 3;
        } catch (RuntimeException e) {
            System.out.println("stranger: refused: " + e.getMessage());
            return 0;
        }
    }

    private static void flood(String host, int port, int n) throws InterruptedException {
        Map<Integer, Socket> sockets = new TreeMap<>();
        for (int i = 0; i < n; i++) {
            try {
                Socket s = new Socket();
                s.connect(new InetSocketAddress(host, port), 5000);
                DataOutputStream out = new DataOutputStream(s.getOutputStream());
                out.writeInt(MAGIC);
                if (i % 2 == 0) {
                    out.writeInt(1);
                    out.writeByte(SET);
                } else {
                    out.writeInt(currentProtocolVersion());
                    out.write(new byte[NONCE_BYTES]);
                }
                out.writeInt(ONE_GIB); // what never comes
                if (i % 2 == 1) {
                    out.write(new byte[NONCE_BYTES - 4]); // the rest of a (wrong) 32-byte proof
                }
                out.flush();
                sockets.put(i, s);
            } catch (IOException e) {
                System.out.println("stranger: connection " + i + " refused or closed while sending: " + e);
            }
        }
        Thread.sleep(5000); // let the store chew on what it was told
        for (Map.Entry<Integer, Socket> e : sockets.entrySet()) {
            System.out.println("stranger: connection " + e.getKey() + ": " + state(e.getValue()));
            try {
                e.getValue().close();
            } catch (IOException ignored) {
                // closing is all we wanted
            }
        }
    }

    /** The store's protocol version (TcpStoreProtocol.VERSION, package-private), so the flood gets past the version check. */
    private static int currentProtocolVersion() {
        try {
            var field = Class.forName("org.ddp4j.distributed.store.TcpStoreProtocol").getDeclaredField("VERSION");
            field.setAccessible(true);
            return field.getInt(null);
        } catch (ReflectiveOperationException e) {
            return 1;
        }
    }

    /** What the store did with a connection: how many bytes it sent back, and whether it closed it. */
    private static String state(Socket s) {
        int received = 0;
        try {
            s.setSoTimeout(200);
            InputStream in = s.getInputStream();
            while (in.read() >= 0) {
                received++;
            }
            return "closed by the store after sending " + received + " byte(s)";
        } catch (SocketTimeoutException e) {
            return "still open after the store sent " + received + " byte(s): it waits for the announced key";
        } catch (IOException e) {
            return "reset by the store after " + received + " byte(s) (" + e.getMessage() + ")";
        }
    }
}
