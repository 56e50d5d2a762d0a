package org.ddp4j.internal;

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
 * Copies one worker's stdout or stderr (a launcher's or a spawning parent's child) to the parent's
 * stream line by line, each line prefixed with {@code [rankN]: } and written whole, and optionally
 * keeps the last lines so that a failure can quote them. Bytes pass through unchanged, so any
 * encoding the worker writes survives; a last line without a newline gets one.
 */
public final class OutputPump implements Runnable {
    private final InputStream in;
    private final PrintStream sink;
    private final byte[] prefix;
    private final int keep;
    private final Deque<String> tail = new ArrayDeque<>();

    /**
     * @param in the worker's stdout or stderr
     * @param sink where prefixed lines go; lines of all workers are written whole, under its lock
     * @param prefix written before each line, e.g. {@code "[rank0]: "}
     * @param keep how many of the last lines {@link #tail()} returns (0: none kept)
     */
    public OutputPump(InputStream in, PrintStream sink, String prefix, int keep) {
        this.in = in;
        this.sink = sink;
        this.prefix = prefix.getBytes(StandardCharsets.UTF_8);
        this.keep = keep;
    }

    /** Starts a daemon thread running this pump. */
    public Thread start(String name) {
        Thread t = new Thread(this, name);
        t.setDaemon(true);
        t.start();
        return t;
    }

    /** The last lines read so far, oldest first. */
    public synchronized List<String> tail() {
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
        // One write per line: an autoflushing sink would otherwise flush the prefix, the text and
        // the newline separately, and another process sharing the terminal (a second launcher)
        // could slip its output in between.
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
