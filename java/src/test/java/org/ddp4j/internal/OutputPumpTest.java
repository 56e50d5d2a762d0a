package org.ddp4j.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

class OutputPumpTest {

    private static String pump(String input) throws InterruptedException {
        ByteArrayOutputStream sink = new ByteArrayOutputStream();
        try (PrintStream ps = new PrintStream(sink, false, StandardCharsets.UTF_8)) {
            Thread t = new OutputPump(new ByteArrayInputStream(input.getBytes(StandardCharsets.UTF_8)), ps, "[rank3]: ", 0)
                    .start("test-pump");
            t.join(5000);
        }
        return sink.toString(StandardCharsets.UTF_8);
    }

    @Test
    void prefixesEveryLineAndEndsTheLastOne() throws InterruptedException {
        assertEquals("[rank3]: a\n[rank3]: \n[rank3]: b c\n[rank3]: tail\n", pump("a\n\nb c\ntail"));
        assertEquals("", pump(""));
    }

    @Test
    void passesBytesThroughUnchanged() throws InterruptedException {
        StringBuilder longLine = new StringBuilder();
        for (int i = 0; i < 3000; i++) {
            longLine.append("é€");
        }
        assertEquals("[rank3]: Grüße ✓\r\n[rank3]: " + longLine + "\n", pump("Grüße ✓\r\n" + longLine + "\n"));
    }
}
