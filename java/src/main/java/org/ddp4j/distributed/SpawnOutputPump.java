package org.ddp4j.distributed;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;

/**
 * Copies one spawned worker's stdout or stderr to the parent's stream, each line prefixed with
 * {@code [rankN]: } and written whole, and keeps the last lines so that a failure can quote them.
 */
final class SpawnOutputPump implements Runnable {
    private final InputStream in;
    private final PrintStream sink;
    private final byte[] prefix;
    private final int keep;
    private final Deque<String> tail = new ArrayDeque<>();

    /**
     * @param keep how many of the last lines {@link #tail()} returns (0: none kept)
     */
    SpawnOutputPump(InputStream in, PrintStream sink, String prefix, int keep) {
        this.in = in;
        this.sink = sink;
        this.prefix = prefix.getBytes(StandardCharsets.UTF_8);
        this.keep = keep;
    }

    /** Starts a daemon thread running this pump. */
    Thread start(String name) {
        Thread t = new Thread(this, name);
        t.setDaemon(true);
        t.start();
        return t;
    }

    /** The last lines read so far, oldest first. */
    synchronized List<String> tail() {
        return new ArrayList<>(tail);
    }

    @Override
    public void run() {
        ByteArrayOutputStream line = new ByteArrayOutputStream(256);
        byte[] buf = new byte[8192];
        try (in) {
            for (int n; (n = in.read(buf)) >= 0; ) {
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
            // the worker is gone: nothing more to copy
        } finally {
            if (line.size() > 0) {
                emit(line);
            }
        }
    }

    private void emit(ByteArrayOutputStream line) {
        byte[] text = line.toByteArray();
        line.reset();
        if (keep > 0) {
            synchronized (this) {
                tail.addLast(new String(text, StandardCharsets.UTF_8));
                if (tail.size() > keep) {
                    tail.removeFirst();
                }
            }
        }
        // One write per line, so lines of different workers never interleave mid-line.
        byte[] whole = new byte[prefix.length + text.length + 1];
        System.arraycopy(prefix, 0, whole, 0, prefix.length);
        System.arraycopy(text, 0, whole, prefix.length, text.length);
        whole[whole.length - 1] = '\n';
        synchronized (sink) {
            sink.write(whole, 0, whole.length);
            sink.flush();
        }
    }
}
