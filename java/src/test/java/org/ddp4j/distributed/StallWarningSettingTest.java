package org.ddp4j.distributed;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.ddp4j.testing.RankProcesses;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * DDP4J_STALL_WARNING_SECONDS below the stall inspector's period (about a second) is refused by
 * name with the minimum, before the group exists: such a threshold would never warn for a stall
 * that ends within the inspector's second.
 */
class StallWarningSettingTest {
    private static final String VARIABLE = "DDP4J_STALL_WARNING_SECONDS";

    @Test
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void aThresholdBelowOneSecondIsRefusedWhenTheGroupStarts() throws Exception {
        List<String> out = RankProcesses.run(StallSettingMain.class, 1, Map.of(VARIABLE, "0.5"), Duration.ofSeconds(50), r -> 3);
        assertTrue(out.get(0).contains("refused: IllegalStateException: " + VARIABLE + "=\"0.5\" is not a number of seconds"
                + " of at least 1: the stall inspector looks about once a second"), out.get(0));
    }

    @Test
    void oneSecondIsTheShortestThreshold() {
        assertEquals(Duration.ofSeconds(1), FlightRecorderMonitor.stallThreshold(Map.of(VARIABLE, "1")));
        assertEquals(Duration.ofMillis(2500), FlightRecorderMonitor.stallThreshold(Map.of(VARIABLE, "2.5")));
        assertEquals(Duration.ofSeconds(60), FlightRecorderMonitor.stallThreshold(Map.of()));
        IllegalStateException e = assertThrows(IllegalStateException.class,
                () -> FlightRecorderMonitor.stallThreshold(Map.of(VARIABLE, "0.999")));
        assertTrue(e.getMessage().startsWith(VARIABLE + "=\"0.999\" is not a number of seconds of at least 1"), e.getMessage());
        assertTrue(e.getMessage().endsWith("unset it for the default (60)"), e.getMessage());
        e = assertThrows(IllegalStateException.class, () -> FlightRecorderMonitor.stallThreshold(Map.of(VARIABLE, "-1")));
        assertEquals(VARIABLE + "=\"-1\" is not a positive number of seconds; unset it for the default (60)", e.getMessage());
    }
}
