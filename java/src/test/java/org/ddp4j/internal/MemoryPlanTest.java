package org.ddp4j.internal;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.LinkedHashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The memory check's budget from DDP4J_MEMORY_PER_RANK, and its message with every number. */
class MemoryPlanTest {
    private static Map<String, Long> parts(long params, long state) {
        Map<String, Long> out = new LinkedHashMap<>();
        out.put("parameters", params);
        out.put("gradients", params);
        out.put("AdamW's state", state);
        return out;
    }

    @Test
    void aPlanBeyondTheBudgetNamesEveryPartTheBudgetAndTheFix() {
        MemoryPlan.Budget budget = MemoryPlan.budget(Map.of("DDP4J_MEMORY_PER_RANK", "2G"));
        assertEquals(2L << 30, budget.bytes());
        long params = 600L << 20;
        IllegalStateException e = assertThrows(IllegalStateException.class,
                () -> MemoryPlan.check("AdamW", parts(params, 2 * params), () -> "shard it", budget));
        assertEquals("AdamW needs at least 2.8 GiB on each rank (parameters 600.0 MiB, gradients 600.0 MiB, AdamW's"
                + " state 1.2 GiB, 512.0 MiB for the JVM and the native runtime; activations come on top) but a rank may"
                + " use 2.0 GiB here (DDP4J_MEMORY_PER_RANK=2G): shard it; DDP4J_MEMORY_PER_RANK sets the budget (0: no"
                + " check)", e.getMessage());
        // 0.5 GiB + 3 x 500 MiB = 1.96 GiB fits in 2 GiB
        assertDoesNotThrow(() -> MemoryPlan.check("AdamW", parts(500L << 20, 500L << 20), () -> "", budget));
    }

    @Test
    void zeroTurnsTheCheckOffAndABadValueIsNamed() {
        assertNull(MemoryPlan.budget(Map.of("DDP4J_MEMORY_PER_RANK", "0")));
        IllegalStateException e = assertThrows(IllegalStateException.class,
                () -> MemoryPlan.budget(Map.of("DDP4J_MEMORY_PER_RANK", "lots")));
        assertEquals(true, e.getMessage().contains("DDP4J_MEMORY_PER_RANK"), e.getMessage());
    }
}
