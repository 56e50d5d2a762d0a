package org.ddp4j.distributed.store;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * The wire format between {@link TcpStore} clients and their server.
 *
 * <p>A connection opens with a mutual HMAC-SHA256 challenge–response over the shared
 * {@link StoreSecret} (nothing else is accepted before it completes):
 * <ol>
 *   <li>client: {@link #MAGIC}, {@link #VERSION}, a 32-byte random nonce Nc;
 *   <li>server: {@code MAGIC}, {@code VERSION}, then {@link #OK} and its own nonce Ns, or
 *       {@link #ERROR} and a reason (e.g. too many connections);
 *   <li>client: HMAC(secret, "ddp4j-store client" | Ns | Nc);
 *   <li>server: {@code OK}, HMAC(secret, "ddp4j-store server" | Nc | Ns) and its limits (max key
 *       bytes, max value bytes, two ints), or {@code ERROR} and a reason (wrong secret).
 * </ol>
 * The client checks the server's proof, so a stranger cannot pose as the store either.
 *
 * <p>Then each call is one request and one response. A request is an opcode byte and its fields;
 * a response is a status byte ({@link #OK}, {@link #TIMEOUT} followed by the missing keys, or
 * {@link #ERROR} followed by a message) and, for {@code OK}, the result. Strings and byte arrays
 * are an int length followed by the bytes (strings in UTF-8); lists are an int count followed by
 * the strings. Blocking requests carry the client's timeout in milliseconds, and the server waits
 * for the keys itself. Lengths are checked against the limits before anything is allocated, and
 * large fields are read in chunks, so a peer that announces more than it sends costs nothing.
 */
final class TcpStoreProtocol {
    private TcpStoreProtocol() {}

    static final int MAGIC = 0x44445034; // "DDP4"
    static final int VERSION = 3; // 3: CLAIM

    static final int NONCE_BYTES = 32;
    static final byte[] CLIENT_LABEL = "ddp4j-store client".getBytes(StandardCharsets.US_ASCII);
    static final byte[] SERVER_LABEL = "ddp4j-store server".getBytes(StandardCharsets.US_ASCII);

    static final byte SET = 1;
    static final byte GET = 2; // key, timeoutMs -> value
    static final byte ADD = 3; // key, delta -> long
    static final byte COMPARE_SET = 4; // key, expected, desired -> value
    static final byte WAIT = 5; // keys, timeoutMs -> nothing
    static final byte CHECK = 6; // keys -> boolean
    static final byte DELETE = 7; // key -> boolean
    static final byte NUM_KEYS = 8; // -> int
    static final byte CLAIM = 9; // key, value -> value now stored; when it is this value, deleted as this connection closes

    static final byte OK = 0;
    static final byte TIMEOUT = 1;
    static final byte ERROR = 2;

    /** Largest list of keys in one request. */
    static final int MAX_KEYS_PER_REQUEST = 1 << 20;

    /** Fields up to this size are allocated at once; larger ones grow as their bytes arrive. */
    private static final int CHUNK = 1 << 20;

    /** A length or count beyond the limits: the connection is closed without reading further. */
    static final class OversizedException extends IOException {
        OversizedException(String message) {
            super(message);
        }
    }

    static void writeBytes(DataOutputStream out, byte[] b) throws IOException {
        out.writeInt(b.length);
        out.write(b);
    }

    /**
     * Reads a length-prefixed field of at most {@code max} bytes.
     *
     * @param what what the field is, for the error ("key", "value")
     * @param limitName the setting that bounds it, for the error
     * @throws OversizedException if the announced length is negative or above {@code max}
     */
    static byte[] readBytes(DataInputStream in, int max, String what, String limitName) throws IOException {
        int n = in.readInt();
        if (n < 0) {
            throw new OversizedException("it announced a " + what + " of negative length " + n);
        }
        if (n > max) {
            throw new OversizedException("it announced a " + what + " of " + n + " bytes, more than " + limitName
                    + "=" + max);
        }
        if (n <= CHUNK) {
            byte[] b = new byte[n];
            in.readFully(b);
            return b;
        }
        byte[] b = new byte[CHUNK];
        int filled = 0;
        while (filled < n) {
            if (filled == b.length) {
                b = Arrays.copyOf(b, (int) Math.min(n, 2L * b.length));
            }
            int r = in.read(b, filled, b.length - filled);
            if (r < 0) {
                throw new EOFException("the connection ended " + (n - filled) + " bytes into a " + what);
            }
            filled += r;
        }
        return b;
    }

    /** Reads a field whose length the peer cannot choose freely (answers from the server). */
    static byte[] readBytes(DataInputStream in) throws IOException {
        return readBytes(in, Integer.MAX_VALUE - 8, "field", "the largest array");
    }

    static void writeString(DataOutputStream out, String s) throws IOException {
        writeBytes(out, s.getBytes(StandardCharsets.UTF_8));
    }

    static String readString(DataInputStream in, int max, String what, String limitName) throws IOException {
        return new String(readBytes(in, max, what, limitName), StandardCharsets.UTF_8);
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

    /** Reads a list of at most {@link #MAX_KEYS_PER_REQUEST} strings of at most {@code maxEach} bytes each. */
    static List<String> readStrings(DataInputStream in, int maxEach, String what, String limitName) throws IOException {
        int n = in.readInt();
        if (n < 0 || n > MAX_KEYS_PER_REQUEST) {
            throw new OversizedException("it announced a list of " + n + " " + what + "s (at most "
                    + MAX_KEYS_PER_REQUEST + " allowed)");
        }
        List<String> list = new ArrayList<>(Math.min(n, 1024));
        for (int i = 0; i < n; i++) {
            list.add(readString(in, maxEach, what, limitName));
        }
        return list;
    }

    static List<String> readStrings(DataInputStream in) throws IOException {
        return readStrings(in, Integer.MAX_VALUE - 8, "string", "the largest array");
    }
}
