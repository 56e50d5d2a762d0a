package org.ddp4j.distributed.store;

import static org.junit.jupiter.api.Assertions.*;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The TcpStore's knobs and their defaults. */
class TcpStoreOptionsTest {
    @Test
    void defaultsWhenNothingIsSet() {
        TcpStoreOptions o = TcpStoreOptions.fromEnvironment(Map.of());
        assertEquals(65536, o.maxKeyBytes());
        assertEquals(16 << 20, o.maxValueBytes());
        assertEquals(1024, o.maxConnections());
        assertNull(o.bindAddress());
        assertNull(o.requestTimeout());
        assertEquals(Duration.ofSeconds(5), o.handshakeTimeout());
    }

    @Test
    void variablesOverrideWithOrWithoutUnits() {
        TcpStoreOptions o = TcpStoreOptions.fromEnvironment(Map.of("DDP4J_STORE_MAX_KEY_BYTES", "1k",
                "DDP4J_STORE_MAX_VALUE_BYTES", " 64MiB ", "DDP4J_STORE_MAX_CONNECTIONS", "4096",
                "DDP4J_STORE_BIND_ADDR", " 0.0.0.0 "));
        assertEquals(1024, o.maxKeyBytes());
        assertEquals(64 << 20, o.maxValueBytes());
        assertEquals(4096, o.maxConnections());
        assertEquals("0.0.0.0", o.bindAddress());
        assertEquals(1 << 30, TcpStoreOptions.size(Map.of("X", "1G"), "X", 5));
        assertEquals(5, TcpStoreOptions.size(Map.of("X", " "), "X", 5));
    }

    @Test
    void malformedValuesNameTheVariable() {
        for (String bad : new String[] {"abc", "0", "-1", "2G", "12T"}) {
            IllegalStateException e = assertThrows(IllegalStateException.class,
                    () -> TcpStoreOptions.fromEnvironment(Map.of("DDP4J_STORE_MAX_VALUE_BYTES", bad)));
            assertEquals("DDP4J_STORE_MAX_VALUE_BYTES=\"" + bad + "\" is not a positive number below 2G (optionally"
                    + " with a K, M or G suffix); unset it for the default 16777216", e.getMessage());
        }
        assertThrows(IllegalArgumentException.class, () -> TcpStoreOptions.defaults().withMaxConnections(0));
        assertThrows(IllegalArgumentException.class, () -> TcpStoreOptions.defaults().withRequestTimeout(Duration.ZERO));
    }
}
