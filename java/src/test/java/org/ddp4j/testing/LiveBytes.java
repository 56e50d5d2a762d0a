package org.ddp4j.testing;

import org.ddp4j.internal.TensorNatives;

/**
 * Native CPU bytes for exact leak checks: what the calling thread allocated less what it freed.
 * The global count ({@code Tensors.nativeBytesInUse()}) also moves when the Cleaner frees an
 * earlier test's forgotten tensor on its own thread, which made exact checks fail now and then.
 */
public final class LiveBytes {
    private LiveBytes() {}

    /** Bytes this thread holds net; compare two readings on the same thread. */
    public static long onThisThread() {
        return TensorNatives.cpuBytesNetOnThisThread();
    }
}
