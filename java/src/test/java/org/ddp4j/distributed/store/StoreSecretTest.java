package org.ddp4j.distributed.store;

import static org.junit.jupiter.api.Assertions.*;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.ddp4j.distributed.DistributedException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Where the TcpStore secret comes from; every test uses its own temporary home. */
class StoreSecretTest {
    @TempDir
    Path home;

    private static final byte[] NONCE = "nonce".getBytes(StandardCharsets.US_ASCII);

    /** Two secrets are the same iff they sign the same way. */
    private static boolean same(StoreSecret a, StoreSecret b) {
        return java.util.Arrays.equals(a.hmac(NONCE), b.hmac(NONCE));
    }

    @Test
    void firstUseCreatesAnOwnerOnlyFileThatLaterUsesRead() throws Exception {
        Path file = home.resolve(".ddp4j/store-secret");
        assertFalse(Files.exists(file));
        StoreSecret first = StoreSecret.resolve(Map.of(), home);
        assertTrue(Files.exists(file));
        assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(file)));
        assertEquals("rwx------", PosixFilePermissions.toString(Files.getPosixFilePermissions(file.getParent())));
        String text = Files.readString(file).trim();
        assertTrue(text.matches("[0-9a-f]{64}"), text);
        assertEquals("the file " + file, first.source());
        StoreSecret again = StoreSecret.resolve(Map.of(), home);
        assertTrue(same(first, again));
        assertTrue(same(first, StoreSecret.of(text.getBytes(StandardCharsets.UTF_8), "copy")));
        // no temporary files left behind
        try (var files = Files.list(file.getParent())) {
            assertEquals(List.of(file), files.toList());
        }
        assertFalse(first.toString().contains(text), "toString shows the secret");
    }

    @Test
    void concurrentFirstUsesAgreeOnOneSecret() throws Exception {
        int n = 8;
        ExecutorService pool = Executors.newFixedThreadPool(n);
        try {
            for (int round = 0; round < 5; round++) {
                Path h = home.resolve("round" + round);
                Files.createDirectories(h);
                CyclicBarrier start = new CyclicBarrier(n);
                List<Future<StoreSecret>> results = new ArrayList<>();
                for (int i = 0; i < n; i++) {
                    results.add(pool.submit(() -> {
                        start.await();
                        return StoreSecret.resolve(Map.of(), h);
                    }));
                }
                StoreSecret first = results.get(0).get(30, TimeUnit.SECONDS);
                for (Future<StoreSecret> f : results) {
                    assertTrue(same(first, f.get(30, TimeUnit.SECONDS)), "round " + round + ": two secrets");
                }
                String onDisk = Files.readString(h.resolve(".ddp4j/store-secret")).trim();
                assertTrue(same(first, StoreSecret.of(onDisk.getBytes(StandardCharsets.UTF_8), "disk")));
            }
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void environmentVariableWinsOverEverything() throws Exception {
        Path named = home.resolve("named");
        Files.writeString(named, "from-file\n");
        Files.setPosixFilePermissions(named, PosixFilePermissions.fromString("rw-------"));
        StoreSecret s = StoreSecret.resolve(Map.of("DDP4J_STORE_SECRET", " s3cret ", "DDP4J_STORE_SECRET_FILE",
                named.toString()), home);
        assertEquals("DDP4J_STORE_SECRET", s.source());
        assertTrue(same(s, StoreSecret.of("s3cret".getBytes(StandardCharsets.UTF_8), "x")));
        assertFalse(Files.exists(home.resolve(".ddp4j")), "the default file was created although a secret was given");
    }

    @Test
    void namedFileIsReadAndTrimmed() throws Exception {
        Path named = home.resolve("named");
        Files.writeString(named, "  from-file\n\n");
        Files.setPosixFilePermissions(named, PosixFilePermissions.fromString("r--------"));
        StoreSecret s = StoreSecret.resolve(Map.of("DDP4J_STORE_SECRET_FILE", named.toString()), home);
        assertEquals("the file " + named + " (DDP4J_STORE_SECRET_FILE)", s.source());
        assertTrue(same(s, StoreSecret.of("from-file".getBytes(StandardCharsets.UTF_8), "x")));
        assertFalse(Files.exists(home.resolve(".ddp4j")));
    }

    @Test
    void missingNamedFileIsAnErrorNotACreation() {
        Path named = home.resolve("nope");
        DistributedException e = assertThrows(DistributedException.class,
                () -> StoreSecret.resolve(Map.of("DDP4J_STORE_SECRET_FILE", named.toString()), home));
        assertTrue(e.getMessage().startsWith("DDP4J_STORE_SECRET_FILE names " + named + ", which does not exist"),
                e.getMessage());
        assertFalse(Files.exists(named));
    }

    @Test
    void emptyValuesAreErrorsNamingTheVariable() throws Exception {
        DistributedException e1 = assertThrows(DistributedException.class,
                () -> StoreSecret.resolve(Map.of("DDP4J_STORE_SECRET", " "), home));
        assertEquals("DDP4J_STORE_SECRET is set but empty: set it to the job's shared secret (the same on every"
                + " host), or unset it to use ~/.ddp4j/store-secret", e1.getMessage());
        Path empty = home.resolve("empty");
        Files.writeString(empty, "\n");
        Files.setPosixFilePermissions(empty, PosixFilePermissions.fromString("rw-------"));
        DistributedException e2 = assertThrows(DistributedException.class,
                () -> StoreSecret.resolve(Map.of("DDP4J_STORE_SECRET_FILE", empty.toString()), home));
        assertTrue(e2.getMessage().startsWith("The store secret file " + empty + " is empty"), e2.getMessage());
        assertThrows(IllegalArgumentException.class, () -> StoreSecret.of(new byte[0], "x"));
    }

    @Test
    void aFileOthersCanReadIsRefusedWithTheFix() throws Exception {
        StoreSecret.resolve(Map.of(), home);
        Path file = home.resolve(".ddp4j/store-secret");
        Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("rw-r--r--"));
        DistributedException e = assertThrows(DistributedException.class, () -> StoreSecret.resolve(Map.of(), home));
        assertEquals("The store secret file " + file + " can be read or written by other users (mode rw-r--r--), so"
                + " anyone on this machine could join or disturb your jobs; run: chmod 600 " + file, e.getMessage());
        Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("rw----rw-"));
        assertThrows(DistributedException.class, () -> StoreSecret.resolve(Map.of(), home));
        Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("rw-------"));
        StoreSecret.resolve(Map.of(), home); // fixed
    }

    @Test
    void anUnwritableHomeNamesTheVariablesToSet() throws Exception {
        Path readOnly = home.resolve("ro");
        Files.createDirectories(readOnly);
        Files.writeString(readOnly.resolve(".ddp4j"), "a file where the directory should be");
        DistributedException e = assertThrows(DistributedException.class, () -> StoreSecret.resolve(Map.of(), readOnly));
        assertTrue(e.getMessage().startsWith("Cannot create the store secret file " + readOnly.resolve(".ddp4j/store-secret")),
                e.getMessage());
        assertTrue(e.getMessage().contains("set DDP4J_STORE_SECRET (the secret itself) or DDP4J_STORE_SECRET_FILE"),
                e.getMessage());
    }

    @Test
    void distinctHomesGetDistinctSecrets() throws Exception {
        Set<String> seen = new HashSet<>();
        for (int i = 0; i < 3; i++) {
            Path h = Files.createDirectories(home.resolve("h" + i));
            StoreSecret.resolve(Map.of(), h);
            seen.add(Files.readString(h.resolve(".ddp4j/store-secret")));
        }
        assertEquals(3, seen.size());
    }
}
