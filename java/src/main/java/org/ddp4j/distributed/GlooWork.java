package org.ddp4j.distributed;

import java.time.Duration;
import org.ddp4j.internal.GlooNatives;

/** A {@link Work} of the Gloo backend: every wait blocks the calling thread. */
final class GlooWork extends NativeWork {
    GlooWork(long handle) {
        super(handle, GlooNatives::workFree);
    }

    @Override
    public void await() {
        await(Duration.ZERO);
    }

    @Override
    String describe(long handle) {
        return GlooNatives.workDescription(handle);
    }

    @Override
    void nativeWait(long handle, long timeoutMs) {
        GlooNatives.workWait(handle, timeoutMs);
    }

    @Override
    boolean nativeIsCompleted(long handle) {
        return GlooNatives.workIsCompleted(handle);
    }
}
