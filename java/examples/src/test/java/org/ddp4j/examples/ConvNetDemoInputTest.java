package org.ddp4j.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The ConvNet demo refuses an empty training set before any rendezvous, instead of training 0 steps. */
class ConvNetDemoInputTest {
    @TempDir
    Path dir;

    private void writeIdx(String name, int... dims) throws IOException {
        ByteBuffer b = ByteBuffer.allocate(4 + 4 * dims.length);
        b.putShort((short) 0).put((byte) 8).put((byte) dims.length);
        for (int d : dims) {
            b.putInt(d);
        }
        Files.write(dir.resolve(name), b.array());
    }

    @Test
    void anEmptyTrainingSetIsAnErrorNamingTheFolder() throws IOException {
        writeIdx("train-images-idx3-ubyte", 0, 28, 28);
        writeIdx("train-labels-idx1-ubyte", 0);
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        PrintStream original = System.err;
        int exit;
        System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
        try {
            // No process group exists and none is needed: the check comes before the rendezvous.
            exit = DemoCommandLine.execute(new ConvNetDemo(), new String[] {"--data", dir.toString(), "--device", "cpu"});
        } finally {
            System.setErr(original);
        }
        String text = err.toString(StandardCharsets.UTF_8);
        assertEquals(1, exit, text);
        assertTrue(text.contains(dir.toString()) && text.contains("holds no images"), text);
    }

    @Test
    void aZeroAccumulationIsAnErrorBeforeTheRendezvous() {
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        PrintStream original = System.err;
        int exit;
        System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
        try {
            exit = DemoCommandLine.execute(new ConvNetDemo(), new String[] {"--accumulate", "0", "--device", "cpu"});
        } finally {
            System.setErr(original);
        }
        String text = err.toString(StandardCharsets.UTF_8);
        assertEquals(1, exit, text);
        assertTrue(text.contains("--accumulate must be at least 1"), text);
    }
}
