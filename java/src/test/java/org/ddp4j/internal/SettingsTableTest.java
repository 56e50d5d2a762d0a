package org.ddp4j.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.ddp4j.testing.RepoFiles;
import org.junit.jupiter.api.Test;

/**
 * Every DDP4J_* variable lives in {@link Setting}: the table in docs/settings.md lists exactly those, with
 * the same defaults, and no Java source outside Setting names one in a string literal of its own.
 */
class SettingsTableTest {
    private static final Pattern ROW = Pattern.compile("^\\| `(DDP4J_[A-Z0-9_]+)` \\| (.*?) \\| (.*) \\|$");
    private static final Pattern LITERAL = Pattern.compile("\"(DDP4J_[A-Z0-9_]+)\"");

    @Test
    void theSettingsPageTableIsTheEnum() throws IOException {
        String page = Files.readString(RepoFiles.path("docs/settings.md"));
        Map<String, String> table = new LinkedHashMap<>();
        for (String line : page.split("\n")) {
            Matcher m = ROW.matcher(line);
            if (m.matches()) {
                table.put(m.group(1), m.group(2));
            }
        }
        assertFalse(table.isEmpty(), "docs/settings.md has no table of DDP4J_* variables");
        Map<String, String> expected = new LinkedHashMap<>();
        for (Setting s : Setting.values()) {
            expected.put(s.variable(), s.defaultValue());
        }
        assertEquals(expected, table);
    }

    @Test
    void noSourceOutsideSettingNamesAVariableInALiteral() throws IOException {
        List<String> found = new ArrayList<>();
        for (Path main : RepoFiles.mainSources()) {
            try (Stream<Path> files = Files.walk(main)) {
                for (Path f : (Iterable<Path>) files.filter(p -> p.toString().endsWith(".java"))::iterator) {
                    if (f.getFileName().toString().equals("Setting.java")) {
                        continue;
                    }
                    for (String line : Files.readAllLines(f)) {
                        String code = line.strip();
                        if (code.startsWith("*") || code.startsWith("/*") || code.startsWith("//")) {
                            continue; // documentation may name a variable
                        }
                        Matcher m = LITERAL.matcher(code);
                        while (m.find()) {
                            found.add(main.relativize(f) + ": " + m.group(1));
                        }
                    }
                }
            }
        }
        assertEquals(List.of(), found, "read these through org.ddp4j.internal.Setting");
    }

    @Test
    void parsersNameTheVariableAndAcceptWhatTheySay() {
        Map<String, String> env = Map.of("DDP4J_SHM", "off", "DDP4J_STORE_MAX_VALUE_BYTES", "64M",
                "DDP4J_TIMEOUT_SECONDS", "2.5", "DDP4J_DDP_OVERLAP", "maybe", "DDP4J_KEEPALIVE_INTERVAL", " ");
        assertFalse(Setting.SHM.flag(env, true));
        assertTrue(Setting.GLOO_SMALL_SYNC.flag(env, true), "unset gives the default");
        assertEquals(64L << 20, Setting.STORE_MAX_VALUE_BYTES.bytes(env, 0));
        assertEquals(Duration.ofMillis(2500), Setting.TIMEOUT_SECONDS.seconds(env, Duration.ZERO));
        assertEquals(null, Setting.KEEPALIVE_INTERVAL.raw(env), "blank is unset");
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> Setting.DDP_OVERLAP.flag(env, true));
        assertEquals("DDP4J_DDP_OVERLAP=\"maybe\" is not 1 or 0 (true/false, on/off, yes/no); unset it for the default (1)",
                e.getMessage());
        e = assertThrows(IllegalStateException.class,
                () -> Setting.TIMEOUT_SECONDS.seconds(Map.of("DDP4J_TIMEOUT_SECONDS", "-3"), Duration.ZERO));
        assertTrue(e.getMessage().startsWith("DDP4J_TIMEOUT_SECONDS=\"-3\" is not a positive number of seconds"),
                e.getMessage());
        e = assertThrows(IllegalStateException.class,
                () -> Setting.GLOO_SMALL_ALLREDUCE_BYTES.bytes(Map.of("DDP4J_GLOO_SMALL_ALLREDUCE_BYTES", "12Q"), 0));
        assertTrue(e.getMessage().startsWith("DDP4J_GLOO_SMALL_ALLREDUCE_BYTES=\"12Q\" is not a number of bytes"),
                e.getMessage());
    }
}
