package org.ddp4j.multiprocessing;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.PipedInputStream;
import java.io.PipedOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
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

    @Test
    void passesCarriageReturnSegmentsThroughPrefixed() throws InterruptedException {
        // progressbar draws "\r" + bar each time and ends with "\n"; the empty segment before each '\r' is dropped
        assertEquals("[rank3]: bar 1/3\r[rank3]: bar 2/3\r[rank3]: bar 3/3\n[rank3]: done\n",
                pump("\rbar 1/3\rbar 2/3\rbar 3/3\ndone\n"));
        // a stream that stops mid-bar still leaves the terminal at the start of a line
        assertEquals("[rank3]: bar 1/3\r\n", pump("\rbar 1/3\r"));
    }

    @Test
    void writesACarriageReturnSegmentBeforeAnyNewlineArrives() throws Exception {
        PipedOutputStream worker = new PipedOutputStream();
        PipedInputStream in = new PipedInputStream(worker);
        ByteArrayOutputStream sink = new ByteArrayOutputStream();
        PrintStream ps = new PrintStream(sink, false, StandardCharsets.UTF_8);
        Thread t = new OutputPump(in, ps, "[rank0]: ", 0).start("test-pump");
        worker.write("\r 40% [====    ]\r".getBytes(StandardCharsets.UTF_8));
        worker.flush();
        String expected = "[rank0]:  40% [====    ]\r";
        long deadline = System.nanoTime() + 10_000_000_000L;
        while (!sinkText(sink, ps).equals(expected) && System.nanoTime() < deadline) {
            Thread.sleep(10);
        }
        assertEquals(expected, sinkText(sink, ps), "the segment is held back until a newline");
        worker.close();
        t.join(5000);
        assertEquals(expected + "\n", sinkText(sink, ps));
    }

    private static String sinkText(ByteArrayOutputStream sink, PrintStream ps) {
        synchronized (ps) {
            return sink.toString(StandardCharsets.UTF_8);
        }
    }

    @Test
    void keepsLinesButNotRedrawnSegmentsInTheTail() throws InterruptedException {
        String input = "start\n\rbar 1\rbar 2\rbar 3\nwindows line\r\n\rlast bar\r";
        OutputPump pump = new OutputPump(new ByteArrayInputStream(input.getBytes(StandardCharsets.UTF_8)),
                new PrintStream(new ByteArrayOutputStream(), true, StandardCharsets.UTF_8), "[rank1]: ", 10);
        Thread t = pump.start("test-pump");
        t.join(5000);
        assertTrue(!t.isAlive());
        assertEquals(List.of("start", "bar 3", "windows line"), pump.tail());
    }
}
