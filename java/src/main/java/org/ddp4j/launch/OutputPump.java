package org.ddp4j.launch;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;

/**
 * Copies one worker stream to the launcher's stream line by line, each line prefixed with
 * {@code [rankN]: } and flushed at once. Bytes pass through unchanged, so any encoding the worker
 * writes survives; a last line without a newline gets one.
 */
final class OutputPump implements Runnable {

    private final InputStream in;
    private final PrintStream sink;
    private final byte[] prefix;

    /**
     * @param in the worker's stdout or stderr
     * @param sink where prefixed lines go; lines of all workers are written whole, under its lock
     * @param prefix written before each line, e.g. {@code "[rank0]: "}
     */
    OutputPump(InputStream in, PrintStream sink, String prefix) {
        this.in = in;
        this.sink = sink;
        this.prefix = prefix.getBytes(StandardCharsets.UTF_8);
    }

    /** Starts a daemon thread running this pump. */
    Thread start(String threadName) {
        Thread t = new Thread(this, threadName);
        t.setDaemon(true);
        t.start();
        return t;
    }

    @Override
    public void run() {
        ByteArrayOutputStream line = new ByteArrayOutputStream(256);
        byte[] buf = new byte[8192];
        try (in) {
            int n;
            while ((n = in.read(buf)) >= 0) {
                int start = 0;
                for (int i = 0; i < n; i++) {
                    if (buf[i] == '\n') {
                        line.write(buf, start, i - start);
                        emit(line);
                        start = i + 1;
                    }
                }
                line.write(buf, start, n - start);
            }
        } catch (IOException e) {
            // The worker is gone or its pipe was closed: nothing more to copy.
        } finally {
            if (line.size() > 0) {
                emit(line);
            }
        }
    }

    private void emit(ByteArrayOutputStream line) {
        // One write per line: an autoflushing sink would otherwise flush the prefix, the text and
        // the newline separately, and another process sharing the terminal (a second launcher)
        // could slip its output in between.
        byte[] whole = new byte[prefix.length + line.size() + 1];
        System.arraycopy(prefix, 0, whole, 0, prefix.length);
        System.arraycopy(line.toByteArray(), 0, whole, prefix.length, line.size());
        whole[whole.length - 1] = '\n';
        line.reset();
        synchronized (sink) {
            sink.write(whole, 0, whole.length);
            sink.flush();
        }
    }
}
