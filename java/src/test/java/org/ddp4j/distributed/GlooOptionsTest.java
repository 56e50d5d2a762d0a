package org.ddp4j.distributed;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;
import org.junit.jupiter.api.Test;

/** The Gloo settings are read from the environment in one place, and a bad value is named. */
class GlooOptionsTest {
    @Test
    void defaultsWhenNothingIsSet() {
        GlooOptions o = GlooOptions.fromEnvironment(Map.of());
        assertNull(o.hostname());
        assertNull(o.socketIfname());
        assertTrue(o.checkCollectives());
        assertEquals(256 * 1024, o.smallAllReduceBytes());
        assertTrue(o.smallAllReduceSyncReads());
    }

    @Test
    void everyVariableIsRead() {
        GlooOptions o = GlooOptions.fromEnvironment(Map.of("DDP4J_GLOO_HOSTNAME", "10.0.0.2", "GLOO_SOCKET_IFNAME", "eth1",
                "DDP4J_GLOO_CHECK_COLLECTIVES", "0", "DDP4J_GLOO_SMALL_ALLREDUCE_BYTES", " 4096 ", "DDP4J_GLOO_SMALL_SYNC", "0"));
        assertEquals("10.0.0.2", o.hostname());
        assertEquals("eth1", o.socketIfname());
        assertFalse(o.checkCollectives());
        assertEquals(4096, o.smallAllReduceBytes());
        assertFalse(o.smallAllReduceSyncReads());
    }

    @Test
    void sharedMemoryIsOnUnlessSetToZeroOrFalse() {
        GlooOptions o = GlooOptions.fromEnvironment(Map.of());
        assertTrue(o.shm());
        assertNull(o.shmHostId());
        assertFalse(GlooOptions.fromEnvironment(Map.of("DDP4J_SHM", "0")).shm());
        assertFalse(GlooOptions.fromEnvironment(Map.of("DDP4J_SHM", "false")).shm());
        assertTrue(GlooOptions.fromEnvironment(Map.of("DDP4J_SHM", "1")).shm());
        assertEquals("hostA", GlooOptions.fromEnvironment(Map.of("DDP4J_SHM_HOST_ID", "hostA")).shmHostId());
    }

    @Test
    void aByteCountThatIsNotOneIsNamed() {
        assertEquals(64 << 10, GlooOptions.fromEnvironment(Map.of("DDP4J_GLOO_SMALL_ALLREDUCE_BYTES", "64k"))
                .smallAllReduceBytes(), "a binary suffix, as every byte-count setting");
        assertEquals(256 << 10, GlooOptions.fromEnvironment(Map.of("DDP4J_GLOO_SMALL_ALLREDUCE_BYTES", " "))
                .smallAllReduceBytes(), "blank is unset");
        for (String bad : new String[] {"lots", "-1", "12Q"}) {
            var e = assertThrows(IllegalStateException.class,
                    () -> GlooOptions.fromEnvironment(Map.of("DDP4J_GLOO_SMALL_ALLREDUCE_BYTES", bad)));
            assertTrue(e.getMessage().contains("DDP4J_GLOO_SMALL_ALLREDUCE_BYTES=\"" + bad + "\""), e.getMessage());
        }
    }

    @Test
    void aSwitchThatIsNotOneIsNamed() {
        var e = assertThrows(IllegalStateException.class,
                () -> GlooOptions.fromEnvironment(Map.of("DDP4J_SHM", "maybe")));
        assertTrue(e.getMessage().startsWith("DDP4J_SHM=\"maybe\" is not 1 or 0"), e.getMessage());
        assertFalse(GlooOptions.fromEnvironment(Map.of("DDP4J_GLOO_SMALL_SYNC", "false")).smallAllReduceSyncReads());
    }
}
