package org.ddp4j.utils;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/** The bar's frames keep one width, with the loss shown or not yet, and fit the terminal less the rank prefix. */
class EpochProgressTest {
    @Test
    void theBarKeepsItsWidthWhenTheLossAppears() throws Exception {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (PrintStream out = new PrintStream(bytes, true, StandardCharsets.UTF_8);
                EpochProgress bar = EpochProgress.start(out, Map.of("COLUMNS", "90"), 0, 2, 40)) {
            for (int i = 0; i < 40; i++) {
                if (i == 20) {
                    bar.showLoss(0.1234f);
                }
                bar.step();
                Thread.sleep(30); // several redraws (every 500 ms) before and after the loss shows
            }
        }
        List<String> frames = Arrays.stream(bytes.toString(StandardCharsets.UTF_8).split("[\r\n]"))
                .filter(f -> f.contains("Epoch 1/2")).collect(Collectors.toList());
        assertTrue(frames.size() >= 2, "expected several frames, got " + frames);
        assertTrue(frames.stream().anyMatch(f -> f.contains("loss       -")), "no frame before the loss: " + frames);
        assertTrue(frames.stream().anyMatch(f -> f.contains("loss  0.1234")), "no frame with the loss: " + frames);
        // the bar itself: the part between the brackets
        List<Integer> barWidths = frames.stream().filter(f -> f.contains("?") == false)
                .map(f -> f.indexOf(']') - f.indexOf('[')).distinct().collect(Collectors.toList());
        assertEquals(1, barWidths.size(), "the bar changed width: " + frames);
        for (String f : frames) {
            assertTrue(f.length() <= 80, "frame wider than COLUMNS less the [rank0]: prefix: " + f.length() + " " + f);
        }
        assertFalse(EpochProgress.enabled(1, Map.of(EpochProgress.ENV, "1")), "only rank 0 draws");
        assertTrue(EpochProgress.enabled(0, Map.of(EpochProgress.ENV, "1")));
    }
}
