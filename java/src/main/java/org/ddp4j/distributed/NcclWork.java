package org.ddp4j.distributed;

import java.time.Duration;
import org.ddp4j.internal.NcclNatives;

/**
 * A {@link Work} of the NCCL backend. {@link #await()} orders the GPU's compute stream after the
 * collective without blocking the host (as PyTorch's {@code work.wait()} for NCCL);
 * {@link #await(Duration)} and {@link #awaitBlocking()} block the host until the collective has
 * finished on the GPU. The native side keeps the tensors alive until the GPU is done, whenever
 * the handle is freed.
 */
final class NcclWork extends NativeWork {
    NcclWork(long handle) {
        super(handle, NcclNatives::workFree);
    }

    @Override
    public void await() {
        call(NcclNatives::workSynchronize, false);
    }

    @Override
    String describe(long handle) {
        return NcclNatives.workDescription(handle);
    }

    @Override
    void nativeWait(long handle, long timeoutMs) {
        NcclNatives.workWait(handle, timeoutMs);
    }

    @Override
    boolean nativeIsCompleted(long handle) {
        return NcclNatives.workIsCompleted(handle);
    }
}
