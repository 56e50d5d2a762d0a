package org.ddp4j.distributed.rendezvous;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.util.HexFormat;

/**
 * Who a process is, for messages that must tell two processes apart ("pid 123 on host a
 * (10.0.0.2)"), plus a token unique to this JVM so that a process can recognise its own earlier
 * claims in a store.
 *
 * @param token unique to one JVM (random)
 * @param description "pid P on host H" and, when known, " (ADDRESS)"
 */
public record ProcessIdentity(String token, String description) {
    private static final String JVM_TOKEN = newToken();

    /**
     * This process.
     *
     * @param address the address other hosts reach it by (e.g. its end of the store connection), or null
     */
    public static ProcessIdentity current(String address) {
        return new ProcessIdentity(JVM_TOKEN, "pid " + ProcessHandle.current().pid() + " on host " + hostName()
                + (address == null ? "" : " (" + address + ")"));
    }

    /** The form stored in a key: token, newline, description. */
    String encode() {
        return token + "\n" + description;
    }

    /** The inverse of {@link #encode()}; a value in another form is kept whole as the description. */
    static ProcessIdentity decode(String s) {
        int nl = s.indexOf('\n');
        return nl < 0 ? new ProcessIdentity("", s) : new ProcessIdentity(s.substring(0, nl), s.substring(nl + 1));
    }

    /** The kernel's host name, without a DNS lookup (which can hang on a badly configured host). */
    private static String hostName() {
        try {
            String h = Files.readString(Path.of("/proc/sys/kernel/hostname"), StandardCharsets.UTF_8).trim();
            if (!h.isEmpty()) {
                return h;
            }
        } catch (IOException | RuntimeException e) {
            // not Linux: fall back
        }
        String env = System.getenv("HOSTNAME");
        return env == null || env.isBlank() ? "unknown" : env.trim();
    }

    private static String newToken() {
        byte[] b = new byte[12];
        new SecureRandom().nextBytes(b);
        return HexFormat.of().formatHex(b);
    }
}
