package org.ddp4j.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** {@code --comm-hook}'s values: the four names, PowerSGD's optional rank, and a clear refusal of the rest. */
class CommHookChoiceTest {
    @Test
    void parsesTheNamesAndPowerSgdsRank() {
        assertEquals(new CommHookChoice("allreduce", 1), CommHookChoice.parse("allreduce"));
        assertEquals(new CommHookChoice("bf16", 1), CommHookChoice.parse("BF16"));
        assertEquals(new CommHookChoice("fp16", 1), CommHookChoice.parse("fp16"));
        assertEquals(new CommHookChoice("powersgd", 1), CommHookChoice.parse("powersgd"));
        assertEquals(new CommHookChoice("powersgd", 4), CommHookChoice.parse("powersgd:4"));
        assertEquals("powersgd:4", CommHookChoice.parse("powersgd:4").toString());
    }

    @Test
    void refusesAnythingElseNamingTheValues() {
        for (String bad : new String[] {"gzip", "bf16:2", "powersgd:0", "powersgd:x", "powersgd:1:2", ""}) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> CommHookChoice.parse(bad));
            assertTrue(e.getMessage().contains("--comm-hook"), e.getMessage());
        }
    }
}
