package org.ddp4j.multiprocessing;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.function.Consumer;

/**
 * Copies one worker's stdout or stderr (a launcher's or a spawning parent's child) to the parent's
 * stream line by line, each line prefixed with {@code [rankN]: } and written whole, and optionally
 * keeps the last lines so that a failure can quote them. Bytes pass through unchanged, so any
 * encoding the worker writes survives; a last line without a newline gets one. A segment ending in
 * '\r' (a progress bar redrawing its line) passes through at once, prefixed and with its '\r', so the
 * bar moves on the parent's terminal instead of being held back until a '\n'.
 */
public final class OutputPump implements Runnable {
    private final InputStream in;
    private final PrintStream sink;
    private final byte[] prefix;
    private final int keep;
    private final Deque<String> tail = new ArrayDeque<>();
    /** The text of the last segment that ended with '\r' and no '\n' since: a progress bar's last drawing. */
    private String redrawn;
    /** Sees every complete line (without prefix), on the pump's thread; null for none. */
    private volatile Consumer<String> listener;

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

    /** Makes {@code listener} see every complete line from now on (unprefixed, on the pump's thread). */
    public OutputPump listen(Consumer<String> listener) {
        this.listener = listener;
        return this;
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
                    if (buf[i] == '\n' || buf[i] == '\r') {
                        line.write(buf, start, i - start);
                        end(line, buf[i]);
                        start = i + 1;
                    }
                }
                line.write(buf, start, n - start);
            }
        } catch (IOException e) {
            // the worker is gone: nothing more to copy
        } finally {
            if (line.size() > 0) {
                end(line, (byte) '\n');
            } else if (redrawn != null) {
                write(new byte[0], new byte[] {'\n'}); // leave the terminal at the start of a line
            }
        }
    }

    /**
     * Ends the segment in {@code line} with {@code terminator}. A '\r'-terminated segment (a progress
     * bar redrawing itself) is written at once, prefixed, with its '\r', so the next one overwrites it
     * on a terminal; it is not kept in the tail unless a '\n' follows it directly ("\r\n" line ends).
     * Empty segments before a '\r' are dropped: a bar that starts each drawing with '\r' would
     * otherwise print a bare prefix.
     */
    private void end(ByteArrayOutputStream line, byte terminator) {
        byte[] text = line.toByteArray();
        line.reset();
        if (terminator == '\r') {
            if (text.length > 0) {
                write(prefix, text, new byte[] {'\r'});
                redrawn = new String(text, StandardCharsets.UTF_8);
            }
            return;
        }
        if (text.length == 0 && redrawn != null) {
            write(new byte[0], new byte[] {'\n'}); // "text\r\n": the text is on screen already
            keep(redrawn);
        } else {
            write(prefix, text, new byte[] {'\n'});
            keep(new String(text, StandardCharsets.UTF_8));
        }
        redrawn = null;
    }

    private void keep(String text) {
        Consumer<String> l = listener;
        if (l != null) {
            l.accept(text);
        }
        if (keep > 0) {
            synchronized (this) {
                tail.addLast(text);
                if (tail.size() > keep) {
                    tail.removeFirst();
                }
            }
        }
    }

    private void write(byte[]... parts) {
        // One write per segment: an autoflushing sink would otherwise flush the prefix, the text and
        // the terminator separately, and another process sharing the terminal (a second launcher)
        // could slip its output in between.
        int length = 0;
        for (byte[] part : parts) {
            length += part.length;
        }
        byte[] whole = new byte[length];
        int at = 0;
        for (byte[] part : parts) {
            System.arraycopy(part, 0, whole, at, part.length);
            at += part.length;
        }
        synchronized (sink) {
            sink.write(whole, 0, whole.length);
            sink.flush();
        }
    }
}
