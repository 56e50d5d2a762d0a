package org.ddp4j.distributed.store;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * The wire format between {@link TcpStore} clients and their server.
 *
 * <p>A connection opens with a handshake: the client sends {@link #MAGIC} and {@link #VERSION}
 * (two ints), the server answers the same two ints. Then each call is one request and one
 * response. A request is an opcode byte and its fields; a response is a status byte
 * ({@link #OK}, {@link #TIMEOUT} followed by the missing keys, or {@link #ERROR} followed by a
 * message) and, for {@code OK}, the result. Strings and byte arrays are an int length followed by
 * the bytes (strings in UTF-8); lists are an int count followed by the strings. Blocking requests
 * carry the client's timeout in milliseconds, and the server waits for the keys itself.
 */
final class TcpStoreProtocol {
    private TcpStoreProtocol() {}

    static final int MAGIC = 0x44445034; // "DDP4"
    static final int VERSION = 1;

    static final byte SET = 1;
    static final byte GET = 2; // key, timeoutMs -> value
    static final byte ADD = 3; // key, delta -> long
    static final byte COMPARE_SET = 4; // key, expected, desired -> value
    static final byte WAIT = 5; // keys, timeoutMs -> nothing
    static final byte CHECK = 6; // keys -> boolean
    static final byte DELETE = 7; // key -> boolean
    static final byte NUM_KEYS = 8; // -> int

    static final byte OK = 0;
    static final byte TIMEOUT = 1;
    static final byte ERROR = 2;

    /** Largest string or value accepted, so that a stray peer cannot make us allocate gigabytes. */
    static final int MAX_LENGTH = 1 << 30;

    static void writeBytes(DataOutputStream out, byte[] b) throws IOException {
        out.writeInt(b.length);
        out.write(b);
    }

    static byte[] readBytes(DataInputStream in) throws IOException {
        int n = in.readInt();
        if (n < 0 || n > MAX_LENGTH) {
            throw new IOException("corrupt TcpStore message: length " + n);
        }
        byte[] b = new byte[n];
        in.readFully(b);
        return b;
    }

    static void writeString(DataOutputStream out, String s) throws IOException {
        writeBytes(out, s.getBytes(StandardCharsets.UTF_8));
    }

    static String readString(DataInputStream in) throws IOException {
        return new String(readBytes(in), StandardCharsets.UTF_8);
    }

    static void writeStrings(DataOutputStream out, List<String> list) throws IOException {
        out.writeInt(list.size());
        for (String s : list) {
            writeString(out, s);
        }
    }

    static List<String> readStrings(DataInputStream in) throws IOException {
        int n = in.readInt();
        if (n < 0 || n > MAX_LENGTH / 4) {
            throw new IOException("corrupt TcpStore message: count " + n);
        }
        List<String> list = new ArrayList<>(Math.min(n, 1024));
        for (int i = 0; i < n; i++) {
            list.add(readString(in));
        }
        return list;
    }
}
