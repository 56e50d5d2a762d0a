package org.ddp4j.distributed.store;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.locks.ReentrantLock;
import org.ddp4j.distributed.DistributedException;
import org.ddp4j.distributed.DistributedTimeoutException;

/**
 * A {@link Store} kept in one file that several processes (and several instances in one process)
 * share: PyTorch's {@code torch.distributed.FileStore}, used by the {@code file://} init method.
 *
 * <p>The file is an append-only log of records: {@code 'S'} (set), key, value, or {@code 'D'}
 * (delete), key; each key and value is an int length followed by its bytes (keys in UTF-8). Every
 * operation holds an OS file lock ({@link FileChannel#lock}) on the whole file, shared to read and
 * exclusive to append, and first reads the records other processes appended since last time.
 * Within one JVM all instances on the same file share one channel and one lock, as the JDK
 * requires. Blocking calls ({@link #get}, {@link #waitFor}) poll the file with short sleeps (a few
 * milliseconds, growing to 25 ms).
 *
 * <p>As in PyTorch, the store counts its users in the file; when the last one closes, the file is
 * deleted. A file left behind by a crashed run still holds that run's keys: give each run a fresh
 * file.
 */
public final class FileStore implements Store {
    private static final byte SET = 'S';
    private static final byte DELETE = 'D';
    /** The counter of open instances, across processes; not a user key. */
    static final String USERS_KEY = "__ddp4j_filestore_users__";
    private static final long MAX_POLL_MS = 25;

    /** Files open in this JVM, by real path. Guarded by its own monitor. */
    private static final Map<Path, SharedFile> OPEN = new HashMap<>();

    private final Path file;
    private final Duration timeout;
    private final String where;
    private final SharedFile shared;
    private volatile boolean closed;

    /**
     * Opens (creating if needed) the store in {@code file}.
     * Mirrors {@code torch.distributed.FileStore(file_name, world_size)} with a timeout.
     *
     * @param file the shared file; its directory must exist, and every process must see the same file
     *     (a local or a network file system with working POSIX locks)
     * @param timeout how long {@link #get} and {@link #waitFor(List)} wait; zero means do not wait
     * @throws DistributedException if the file cannot be created, opened or locked
     * @throws IllegalArgumentException if {@code timeout} is negative
     */
    public FileStore(Path file, Duration timeout) {
        Objects.requireNonNull(file, "file");
        this.timeout = StoreSupport.checkTimeout(timeout);
        this.where = "FileStore " + file;
        this.file = file;
        this.shared = acquire(file, where);
        try {
            add(USERS_KEY, 1);
        } catch (RuntimeException e) {
            release(shared);
            throw e;
        }
    }

    /** The file this store lives in. */
    public Path path() {
        return file;
    }

    @Override
    public void set(String key, byte[] value) {
        StoreSupport.checkKey(key);
        Objects.requireNonNull(value, "value");
        byte[] copy = value.clone();
        locked(true, "set(\"" + key + "\")", f -> {
            f.append(SET, key, copy);
            return null;
        });
    }

    /**
     * {@inheritDoc}
     *
     * @throws DistributedTimeoutException naming the key, if it is not set within {@link #timeout()}
     * @throws DistributedException if the file cannot be read
     */
    @Override
    public byte[] get(String key) {
        StoreSupport.checkKey(key);
        long deadline = StoreSupport.deadlineNanos(timeout);
        long sleepMs = 1;
        while (true) {
            byte[] value = locked(false, "get(\"" + key + "\")", f -> f.cache.get(key));
            if (value != null) {
                return value.clone();
            }
            sleepMs = pause(deadline, sleepMs, List.of(key), timeout);
        }
    }

    /**
     * {@inheritDoc}
     *
     * @throws DistributedException if the key holds a value that is not a decimal counter, or the file cannot be written
     */
    @Override
    public long add(String key, long delta) {
        StoreSupport.checkKey(key);
        return locked(true, "add(\"" + key + "\")", f -> {
            long value = StoreSupport.addCounter(key, f.cache.get(key), delta, where);
            f.append(SET, key, StoreSupport.encodeCounter(value));
            return value;
        });
    }

    /** {@inheritDoc} An absent key with a non-empty {@code expected} is left absent and {@code expected} is returned, as in PyTorch. */
    @Override
    public byte[] compareSet(String key, byte[] expected, byte[] desired) {
        StoreSupport.checkKey(key);
        byte[] exp = expected.clone();
        byte[] want = desired.clone();
        return locked(true, "compareSet(\"" + key + "\")", f -> {
            byte[] current = f.cache.get(key);
            if ((current == null && exp.length == 0) || (current != null && Arrays.equals(current, exp))) {
                f.append(SET, key, want);
                return want.clone();
            }
            return current == null ? exp.clone() : current.clone();
        });
    }

    /**
     * {@inheritDoc}
     *
     * @param timeout how long to wait; zero checks once
     * @throws DistributedTimeoutException naming the keys still missing after {@code timeout}
     */
    @Override
    public void waitFor(List<String> keys, Duration timeout) {
        StoreSupport.checkKeys(keys);
        Objects.requireNonNull(timeout, "timeout");
        long deadline = StoreSupport.deadlineNanos(timeout);
        long sleepMs = 1;
        while (true) {
            List<String> missing = locked(false, "waitFor(" + StoreSupport.quote(keys) + ")", f -> f.missing(keys));
            if (missing.isEmpty()) {
                return;
            }
            sleepMs = pause(deadline, sleepMs, missing, timeout);
        }
    }

    @Override
    public boolean check(List<String> keys) {
        StoreSupport.checkKeys(keys);
        return locked(false, "check(" + StoreSupport.quote(keys) + ")", f -> f.missing(keys).isEmpty());
    }

    @Override
    public boolean deleteKey(String key) {
        StoreSupport.checkKey(key);
        return locked(true, "deleteKey(\"" + key + "\")", f -> {
            if (!f.cache.containsKey(key)) {
                return false;
            }
            f.append(DELETE, key, null);
            return true;
        });
    }

    /** The number of keys in the store (not counting its internal user counter). Mirrors {@code Store.num_keys}. */
    public int numKeys() {
        return locked(false, "numKeys()", f -> f.cache.size() - (f.cache.containsKey(USERS_KEY) ? 1 : 0));
    }

    @Override
    public Duration timeout() {
        return timeout;
    }

    /**
     * Leaves the store: decrements the user count in the file and, if this was the last user in
     * any process, deletes the file. Idempotent.
     *
     * @throws DistributedException if the file cannot be updated
     */
    @Override
    public void close() {
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
        }
        try {
            shared.lock.lock();
            try {
                withFileLock(true, "close()", f -> {
                    long users = StoreSupport.addCounter(USERS_KEY, f.cache.get(USERS_KEY), -1, where);
                    f.append(SET, USERS_KEY, StoreSupport.encodeCounter(users));
                    if (users <= 0) {
                        Files.deleteIfExists(f.path);
                    }
                    return null;
                });
            } finally {
                shared.lock.unlock();
            }
        } finally {
            release(shared);
        }
    }

    /** Sleeps before the next poll, or throws the timeout error if the deadline has passed; returns the next sleep. */
    private long pause(long deadline, long sleepMs, List<String> missing, Duration waited) {
        long left = deadline - System.nanoTime();
        if (left <= 0) {
            throw new DistributedTimeoutException(StoreSupport.timeoutMessage(waited, missing, where));
        }
        try {
            Thread.sleep(Math.max(1, Math.min(sleepMs, left / 1_000_000)));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new DistributedException("Interrupted while waiting for keys " + StoreSupport.quote(missing) + " in "
                    + where);
        }
        return Math.min(sleepMs * 2, MAX_POLL_MS);
    }

    private interface Op<T> {
        T run(SharedFile f) throws IOException;
    }

    private <T> T locked(boolean write, String what, Op<T> op) {
        if (closed) {
            throw new DistributedException(where + " is closed; cannot " + what);
        }
        shared.lock.lock();
        try {
            return withFileLock(write, what, op);
        } finally {
            shared.lock.unlock();
        }
    }

    /** Runs {@code op} holding the OS lock on the file, after reading what others appended. JVM lock held. */
    private <T> T withFileLock(boolean write, String what, Op<T> op) {
        SharedFile f = shared;
        try {
            f.ensureOpen();
            try (FileLock ignored = f.channel.lock(0, Long.MAX_VALUE, !write)) {
                f.refresh();
                return op.run(f);
            }
        } catch (ClosedChannelException e) {
            // An interrupt closes a FileChannel: reopen it for the other users of this file.
            boolean interrupted = Thread.interrupted();
            try {
                f.reopen();
            } catch (IOException ignored) {
                // the next call will try again and report
            }
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
            throw new DistributedException(where + ": " + what + " was interrupted", e);
        } catch (IOException e) {
            throw new DistributedException(where + ": " + what + " failed: " + e, e);
        }
    }

    private static SharedFile acquire(Path file, String where) {
        synchronized (OPEN) {
            Path real;
            try {
                Path abs = file.toAbsolutePath();
                FileChannel.open(abs, StandardOpenOption.CREATE, StandardOpenOption.WRITE).close();
                real = abs.toRealPath();
            } catch (IOException e) {
                throw new DistributedException("Cannot open " + where + ": " + e
                        + " (the directory must exist and be writable by every rank)", e);
            }
            SharedFile f = OPEN.get(real);
            if (f == null) {
                f = new SharedFile(real);
                try {
                    f.reopen();
                } catch (IOException e) {
                    throw new DistributedException("Cannot open " + where + ": " + e, e);
                }
                OPEN.put(real, f);
            }
            f.refs++;
            return f;
        }
    }

    private static void release(SharedFile f) {
        synchronized (OPEN) {
            if (--f.refs == 0) {
                OPEN.remove(f.path);
                f.lock.lock();
                try {
                    f.channel.close();
                } catch (IOException ignored) {
                    // closing anyway
                } finally {
                    f.lock.unlock();
                }
            }
        }
    }

    /** One open file, shared by all instances in this JVM: channel, JVM-side lock, and the keys read so far. */
    private static final class SharedFile {
        final Path path;
        final ReentrantLock lock = new ReentrantLock();
        final Map<String, byte[]> cache = new HashMap<>();
        FileChannel channel;
        long position; // bytes of the log already applied to cache
        int refs; // guarded by OPEN

        SharedFile(Path path) {
            this.path = path;
        }

        void reopen() throws IOException {
            if (channel != null) {
                try {
                    channel.close();
                } catch (IOException ignored) {
                    // replacing it
                }
            }
            channel = FileChannel.open(path, StandardOpenOption.CREATE, StandardOpenOption.READ,
                    StandardOpenOption.WRITE);
        }

        void ensureOpen() throws IOException {
            if (!channel.isOpen()) {
                reopen();
            }
        }

        /** Applies the complete records appended since {@link #position}; an incomplete tail is left for later. */
        void refresh() throws IOException {
            long size = channel.size();
            if (size < position) { // the file was replaced or truncated: start over
                cache.clear();
                position = 0;
            }
            if (size == position) {
                return;
            }
            long n = size - position;
            if (n > Integer.MAX_VALUE - 16) {
                throw new IOException("store file too large: " + size + " bytes");
            }
            ByteBuffer buf = ByteBuffer.allocate((int) n);
            while (buf.hasRemaining()) {
                if (channel.read(buf, position + buf.position()) < 0) {
                    break;
                }
            }
            buf.flip();
            while (true) {
                int start = buf.position();
                if (buf.remaining() < 5) {
                    break;
                }
                byte type = buf.get();
                byte[] key = readField(buf);
                if (key == null) {
                    buf.position(start);
                    break;
                }
                if (type == SET) {
                    byte[] value = readField(buf);
                    if (value == null) {
                        buf.position(start);
                        break;
                    }
                    cache.put(new String(key, StandardCharsets.UTF_8), value);
                } else if (type == DELETE) {
                    cache.remove(new String(key, StandardCharsets.UTF_8));
                } else {
                    throw new IOException("corrupt store file " + path + ": unknown record type " + type + " at byte "
                            + (position + start) + " (is it a store file of this version?)");
                }
            }
            position += buf.position();
        }

        private static byte[] readField(ByteBuffer buf) throws IOException {
            if (buf.remaining() < 4) {
                return null;
            }
            int len = buf.getInt();
            if (len < 0) {
                throw new IOException("corrupt store file: negative length");
            }
            if (buf.remaining() < len) {
                return null;
            }
            byte[] b = new byte[len];
            buf.get(b);
            return b;
        }

        /**
         * Appends a record and applies it. Holds the exclusive lock, so no writer is mid-record: an
         * incomplete tail past {@link #position} comes from a writer that crashed and is overwritten.
         */
        void append(byte type, String key, byte[] value) throws IOException {
            byte[] k = key.getBytes(StandardCharsets.UTF_8);
            int len = 1 + 4 + k.length + (type == SET ? 4 + value.length : 0);
            ByteBuffer buf = ByteBuffer.allocate(len);
            buf.put(type).putInt(k.length).put(k);
            if (type == SET) {
                buf.putInt(value.length).put(value);
            }
            buf.flip();
            long at = position;
            while (buf.hasRemaining()) {
                at += channel.write(buf, at);
            }
            if (channel.size() > at) {
                channel.truncate(at);
            }
            position = at;
            if (type == SET) {
                cache.put(key, value);
            } else {
                cache.remove(key);
            }
        }

        List<String> missing(List<String> keys) {
            List<String> out = new ArrayList<>();
            for (String k : keys) {
                if (!cache.containsKey(k)) {
                    out.add(k);
                }
            }
            return out;
        }
    }
}
