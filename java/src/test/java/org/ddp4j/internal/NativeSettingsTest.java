package org.ddp4j.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.ddp4j.testing.RankProcesses;
import org.junit.jupiter.api.Test;

/**
 * The native library's settings go through Java's {@link Setting}: one policy (a switch takes
 * false/off/no/0, a size takes K/M/G, a bad value names the variable) and one canonical form handed down.
 */
class NativeSettingsTest {

    private static String handed(Map<String, String> env, String variable) {
        return NativeSettings.canonical(env).stream().filter(v -> v[0].equals(variable)).map(v -> v[1]).findFirst()
                .orElse(null);
    }

    @Test
    void everyFormASettingTakesBecomesOneCanonicalValue() {
        for (String off : List.of("0", "false", "off", "no", "FALSE")) {
            assertEquals("0", handed(Map.of("DDP4J_CONV_DIRECT", off), "DDP4J_CONV_DIRECT"), off);
        }
        assertEquals("1", handed(Map.of("DDP4J_CONV_DIRECT", "yes"), "DDP4J_CONV_DIRECT"));
        assertEquals(Long.toString(64L << 20), handed(Map.of("DDP4J_CPU_CACHE_LIMIT", "64M"), "DDP4J_CPU_CACHE_LIMIT"));
        assertEquals(Long.toString(1L << 30), handed(Map.of("DDP4J_CUDA_CACHE_LIMIT", "1 GiB"), "DDP4J_CUDA_CACHE_LIMIT"));
        assertEquals("widen", handed(Map.of("DDP4J_CPU_BF16_KERNEL", "Widen"), "DDP4J_CPU_BF16_KERNEL"));
        assertEquals("500", handed(Map.of("DDP4J_FLIGHT_RECORDER_ENTRIES", " 500 "), "DDP4J_FLIGHT_RECORDER_ENTRIES"));
        assertEquals("host-a", handed(Map.of("DDP4J_SHM_HOST_ID", "host-a"), "DDP4J_SHM_HOST_ID"));
        assertEquals(List.of(), NativeSettings.canonical(Map.of("DDP4J_CONV_DIRECT", " ")), "blank reads as unset");
    }

    @Test
    void aBadValueNamesTheVariable() {
        for (Map.Entry<String, String> bad : Map.of("DDP4J_CPU_CACHE_LIMIT", "lots", "DDP4J_CONV_DIRECT", "maybe",
                "DDP4J_CPU_BF16_KERNEL", "fast", "DDP4J_FLIGHT_RECORDER_ENTRIES", "-1").entrySet()) {
            IllegalStateException e = assertThrows(IllegalStateException.class,
                    () -> NativeSettings.canonical(Map.of(bad.getKey(), bad.getValue())));
            assertTrue(e.getMessage().startsWith(bad.getKey() + "=\"" + bad.getValue() + "\" is not "), e.getMessage());
        }
    }

    /** In a fresh JVM the native allocator uses the value Java read: a size with a unit C++ never parsed. */
    @Test
    void theNativeLibraryUsesTheValueJavaRead() throws Exception {
        List<String> out = RankProcesses.run(CacheLimitMain.class, 1, Map.of("DDP4J_CPU_CACHE_LIMIT", "3 MiB"),
                Duration.ofSeconds(60), rank -> 0);
        assertTrue(out.get(0).contains("cache limit " + (3L << 20)), out.get(0));
    }

    /** Prints the CPU allocator's cache limit. */
    public static final class CacheLimitMain {
        public static void main(String[] args) {
            System.out.println("cache limit " + TensorNatives.cacheLimit(0));
        }
    }
}
