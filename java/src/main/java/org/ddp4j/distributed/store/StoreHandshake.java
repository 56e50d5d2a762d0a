package org.ddp4j.distributed.store;

import static org.ddp4j.distributed.store.TcpStoreProtocol.*;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.security.MessageDigest;
import java.security.SecureRandom;
import org.ddp4j.distributed.DistributedException;

/**
 * Both halves of the TcpStore's opening handshake: a mutual HMAC-SHA256 challenge–response over
 * the {@link StoreSecret} (the steps are in {@link TcpStoreProtocol}). Neither side ever sends the
 * secret; each proves it knows it by signing the other's fresh nonce.
 */
final class StoreHandshake {
    private static final SecureRandom RANDOM = new SecureRandom();

    private StoreHandshake() {}

    /** The server's limits, learned by the client at the end of the handshake. */
    record Limits(int maxKeyBytes, int maxValueBytes) {}

    /** What the server's half concluded: null reason when the client is in. */
    record Verdict(String refusal) {
        boolean accepted() {
            return refusal == null;
        }
    }

    /** Something that is not a TcpStore answered (wrong magic, version, or a foreign protocol). */
    static final class NotAStoreException extends IOException {
        NotAStoreException(String message) {
            super(message);
        }
    }

    static byte[] nonce() {
        byte[] n = new byte[NONCE_BYTES];
        RANDOM.nextBytes(n);
        return n;
    }

    /**
     * The client's half.
     *
     * @param where "host:port", for messages
     * @return the server's limits
     * @throws NotAStoreException if the peer does not speak this protocol version
     * @throws DistributedException if the server refuses (e.g. wrong secret, too many connections:
     *     {@link RefusedException}) or fails to prove it knows the secret
     * @throws IOException if the connection fails or times out
     */
    static Limits client(DataInputStream in, DataOutputStream out, StoreSecret secret, String where) throws IOException {
        byte[] clientNonce = nonce();
        out.writeInt(MAGIC);
        out.writeInt(VERSION);
        out.write(clientNonce);
        out.flush();
        int magic = in.readInt();
        int version = in.readInt();
        if (magic != MAGIC) {
            throw new NotAStoreException("The service at " + where + " is not a ddp4j TcpStore; another program holds"
                    + " that port: check --master-port / MASTER_PORT");
        }
        if (version != VERSION) {
            throw new NotAStoreException("The service at " + where + " is a ddp4j TcpStore of another version (protocol "
                    + version + ", expected " + VERSION + "): run the same ddp4j version on every host");
        }
        if (in.readByte() != OK) {
            throw new RefusedException("The TcpStore at " + where + " refused the connection: " + readString(in));
        }
        byte[] serverNonce = new byte[NONCE_BYTES];
        in.readFully(serverNonce);
        out.write(secret.hmac(CLIENT_LABEL, serverNonce, clientNonce));
        out.flush();
        if (in.readByte() != OK) {
            String reason = readString(in);
            throw new DistributedException("The TcpStore at " + where + " refused this process's store secret ("
                    + reason + "): this host and the store's host have different secrets (this one read it from "
                    + secret.source() + "). " + howToShare());
        }
        byte[] serverProof = new byte[NONCE_BYTES];
        in.readFully(serverProof);
        int maxKey = in.readInt();
        int maxValue = in.readInt();
        if (!MessageDigest.isEqual(serverProof, secret.hmac(SERVER_LABEL, clientNonce, serverNonce))) {
            throw new DistributedException("The service at " + where + " answered as a ddp4j TcpStore but could not"
                    + " prove that it knows this process's store secret (read from " + secret.source() + "): it is"
                    + " not this job's store, or its host has a different secret. " + howToShare());
        }
        return new Limits(maxKey, maxValue);
    }

    /** What to do when hosts disagree on the secret. */
    static String howToShare() {
        return "Give every host the same secret: set " + StoreSecret.SECRET_ENV + " to the same value on every host, or "
                + StoreSecret.SECRET_FILE_ENV + " to a file with the same contents, or copy ~/"
                + StoreSecret.DEFAULT_FILE + " from the store's host (mode 0600; hosts that share a home directory"
                + " already agree)";
    }

    /** A server's refusal that may be temporary (too many connections): clients retry until their timeout. */
    static final class RefusedException extends DistributedException {
        RefusedException(String message) {
            super(message);
        }
    }

    /**
     * The server's half, after the client's MAGIC and VERSION were read and found right.
     *
     * @return whether the client proved it knows the secret, and why not
     * @throws IOException if the connection fails or times out
     */
    static Verdict server(DataInputStream in, DataOutputStream out, StoreSecret secret, Limits limits)
            throws IOException {
        return server(in, out, secret, limits, () -> true);
    }

    /**
     * As {@link #server(DataInputStream, DataOutputStream, StoreSecret, Limits)}, asking {@code admit}
     * once the client's proof is verified and before telling the client it is in: false (the
     * server pushed this connection out meanwhile) ends the handshake without an answer.
     */
    static Verdict server(DataInputStream in, DataOutputStream out, StoreSecret secret, Limits limits,
            java.util.function.BooleanSupplier admit) throws IOException {
        byte[] clientNonce = new byte[NONCE_BYTES];
        in.readFully(clientNonce);
        byte[] serverNonce = nonce();
        out.writeInt(MAGIC);
        out.writeInt(VERSION);
        out.writeByte(OK);
        out.write(serverNonce);
        out.flush();
        byte[] proof = new byte[NONCE_BYTES];
        in.readFully(proof);
        if (!MessageDigest.isEqual(proof, secret.hmac(CLIENT_LABEL, serverNonce, clientNonce))) {
            out.writeByte(ERROR);
            writeString(out, "wrong secret");
            out.flush();
            return new Verdict("it does not know this store's secret (a host with a different "
                    + StoreSecret.SECRET_ENV + " / ~/" + StoreSecret.DEFAULT_FILE + ", or not a ddp4j process)");
        }
        if (!admit.getAsBoolean()) {
            return new Verdict("it was pushed out by newer connections before it completed the handshake");
        }
        out.writeByte(OK);
        out.write(secret.hmac(SERVER_LABEL, clientNonce, serverNonce));
        out.writeInt(limits.maxKeyBytes());
        out.writeInt(limits.maxValueBytes());
        out.flush();
        return new Verdict(null);
    }

    /** The server's refusal before the challenge (e.g. too many connections), sent after reading the client's hello. */
    static void refuse(DataOutputStream out, String reason) throws IOException {
        out.writeInt(MAGIC);
        out.writeInt(VERSION);
        out.writeByte(ERROR);
        writeString(out, reason);
        out.flush();
    }
}
