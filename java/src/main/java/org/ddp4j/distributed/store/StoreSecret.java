package org.ddp4j.distributed.store;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.InvalidKeyException;
import java.security.NoSuchAlgorithmException;
import java.security.SecureRandom;
import java.util.HexFormat;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;
import org.ddp4j.distributed.DistributedException;
import org.ddp4j.internal.Setting;

/**
 * The secret that {@link TcpStore} clients and their server share, as Erlang's
 * {@code ~/.erlang.cookie}: whoever knows it may use the store, nobody else.
 *
 * <p>Where it comes from, first match wins:
 * <ol>
 *   <li>{@code DDP4J_STORE_SECRET}: the secret itself (any non-empty text);
 *   <li>{@code DDP4J_STORE_SECRET_FILE}: a file holding it (must exist, readable by its owner only);
 *   <li>{@code ~/.ddp4j/store-secret}: created on first use with 32 random bytes (hex), mode 0600,
 *       so every process of one user on one machine, and hosts that share a home directory,
 *       agree with no set-up.
 * </ol>
 * Surrounding whitespace in a file is ignored. A secret file that other users can read or write
 * is refused (as ssh refuses such a private key): anyone who can read it could join or disturb
 * the user's jobs.
 */
public final class StoreSecret {
    /** Environment variable holding the secret itself. */
    public static final String SECRET_ENV = Setting.STORE_SECRET.variable();
    /** Environment variable naming a file that holds the secret. */
    public static final String SECRET_FILE_ENV = Setting.STORE_SECRET_FILE.variable();
    /** The default file, relative to the user's home directory. */
    public static final String DEFAULT_FILE = ".ddp4j/store-secret";

    private static final Set<PosixFilePermission> OWNER_ONLY = PosixFilePermissions.fromString("rw-------");

    private final byte[] key;
    private final String source;

    private StoreSecret(byte[] key, String source) {
        this.key = key;
        this.source = source;
    }

    /**
     * A secret given directly (tests, embedding applications).
     *
     * @param secret the shared secret, not empty
     * @param source where it came from, for error messages (e.g. "my config")
     * @throws IllegalArgumentException if {@code secret} is empty
     */
    public static StoreSecret of(byte[] secret, String source) {
        Objects.requireNonNull(secret, "secret");
        if (secret.length == 0) {
            throw new IllegalArgumentException("the store secret must not be empty");
        }
        return new StoreSecret(secret.clone(), Objects.requireNonNull(source, "source"));
    }

    /** The secret for this process: {@link #resolve} with the process environment and {@code user.home}. */
    public static StoreSecret fromEnvironment() {
        return resolve(System.getenv(), Path.of(System.getProperty("user.home")));
    }

    /**
     * Finds (or, for the default file, creates) the secret.
     *
     * @param env the environment to read {@code DDP4J_STORE_SECRET} and {@code DDP4J_STORE_SECRET_FILE} from
     * @param home the home directory holding {@code .ddp4j/store-secret}
     * @throws DistributedException if a variable is set but empty, the named file is missing, empty or
     *     readable by other users, or the default file cannot be created; the message says how to fix it
     */
    public static StoreSecret resolve(Map<String, String> env, Path home) {
        String direct = env.get(SECRET_ENV);
        if (direct != null) {
            if (direct.isBlank()) {
                throw new DistributedException(SECRET_ENV + " is set but empty: set it to the job's shared secret (the"
                        + " same on every host), or unset it to use ~/" + DEFAULT_FILE);
            }
            return new StoreSecret(direct.trim().getBytes(StandardCharsets.UTF_8), SECRET_ENV);
        }
        String named = env.get(SECRET_FILE_ENV);
        if (named != null) {
            if (named.isBlank()) {
                throw new DistributedException(SECRET_FILE_ENV + " is set but empty: set it to a file holding the job's"
                        + " shared secret, or unset it to use ~/" + DEFAULT_FILE);
            }
            Path file = Path.of(named.trim());
            if (!Files.exists(file)) {
                throw new DistributedException(SECRET_FILE_ENV + " names " + file + ", which does not exist: create it"
                        + " with the job's shared secret (e.g. `head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \\n' > "
                        + file + " && chmod 600 " + file + "`) and give every host the same file");
            }
            return fromFile(file, "the file " + file + " (" + SECRET_FILE_ENV + ")");
        }
        Path file = home.resolve(DEFAULT_FILE);
        if (!Files.exists(file)) {
            createIfAbsent(file);
        }
        return fromFile(file, "the file " + file);
    }

    /** Where the secret came from: "DDP4J_STORE_SECRET" or "the file PATH ...". Never the secret. */
    public String source() {
        return source;
    }

    /** HMAC-SHA256 of {@code parts}, concatenated, under this secret. */
    byte[] hmac(byte[]... parts) {
        try {
            Mac mac = Mac.getInstance("HmacSHA256");
            mac.init(new SecretKeySpec(key, "HmacSHA256"));
            for (byte[] p : parts) {
                mac.update(p);
            }
            return mac.doFinal();
        } catch (NoSuchAlgorithmException | InvalidKeyException e) {
            throw new IllegalStateException("HmacSHA256 is not available in this JVM", e);
        }
    }

    private static StoreSecret fromFile(Path file, String source) {
        checkPermissions(file);
        String text;
        try {
            text = Files.readString(file, StandardCharsets.UTF_8).trim();
        } catch (IOException e) {
            throw new DistributedException("Cannot read the store secret from " + file + ": " + e
                    + "; fix its permissions or set " + SECRET_ENV + " / " + SECRET_FILE_ENV, e);
        }
        if (text.isEmpty()) {
            throw new DistributedException("The store secret file " + file + " is empty: delete it (a new one is"
                    + " created on first use) or write the job's shared secret into it");
        }
        return new StoreSecret(text.getBytes(StandardCharsets.UTF_8), source);
    }

    /** Refuses a secret file that users other than its owner can read or write. */
    private static void checkPermissions(Path file) {
        Set<PosixFilePermission> perms;
        try {
            perms = Files.getPosixFilePermissions(file);
        } catch (UnsupportedOperationException e) {
            return; // not a POSIX file system: nothing to check
        } catch (IOException e) {
            throw new DistributedException("Cannot read the permissions of the store secret file " + file + ": " + e, e);
        }
        for (PosixFilePermission p : perms) {
            if (!OWNER_ONLY.contains(p) && p != PosixFilePermission.OWNER_EXECUTE) {
                throw new DistributedException("The store secret file " + file + " can be read or written by other"
                        + " users (mode " + PosixFilePermissions.toString(perms) + "), so anyone on this machine could"
                        + " join or disturb your jobs; run: chmod 600 " + file);
            }
        }
    }

    /**
     * Creates {@code file} with a fresh random secret unless it exists. Two processes racing here
     * end with one secret: each writes a private temporary file and hard-links it into place, which
     * fails for all but the first; everyone then reads what is there.
     */
    private static void createIfAbsent(Path file) {
        Path dir = file.getParent();
        Path tmp = null;
        try {
            if (!Files.isDirectory(dir)) {
                try {
                    Files.createDirectories(dir, PosixFilePermissions.asFileAttribute(
                            PosixFilePermissions.fromString("rwx------")));
                } catch (FileAlreadyExistsException e) {
                    // created by a racing process
                }
            }
            byte[] random = new byte[32];
            new SecureRandom().nextBytes(random);
            byte[] text = (HexFormat.of().formatHex(random) + "\n").getBytes(StandardCharsets.US_ASCII);
            tmp = Files.createTempFile(dir, ".store-secret-", ".tmp",
                    PosixFilePermissions.asFileAttribute(OWNER_ONLY));
            try (FileChannel ch = FileChannel.open(tmp, StandardOpenOption.WRITE)) {
                ch.write(java.nio.ByteBuffer.wrap(text));
                ch.force(true);
            }
            try {
                Files.createLink(file, tmp);
            } catch (FileAlreadyExistsException e) {
                // another process won the race: use its secret
            }
        } catch (IOException | UnsupportedOperationException e) {
            if (!Files.exists(file)) {
                throw new DistributedException("Cannot create the store secret file " + file + " (" + e + "): make "
                        + dir + " writable, or set " + SECRET_ENV + " (the secret itself) or " + SECRET_FILE_ENV
                        + " (a file holding it) to the same value on every host", e);
            }
        } finally {
            if (tmp != null) {
                try {
                    Files.deleteIfExists(tmp);
                } catch (IOException ignored) {
                    // a stray temporary file is harmless
                }
            }
        }
    }

    /** Never shows the secret. */
    @Override
    public String toString() {
        return "StoreSecret from " + source;
    }
}
