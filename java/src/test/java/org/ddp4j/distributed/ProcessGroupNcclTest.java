package org.ddp4j.distributed;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeFalse;
import static org.junit.jupiter.api.Assumptions.assumeTrue;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.ddp4j.cuda.Cuda;
import org.ddp4j.distributed.ProcessGroupNccl.DeviceIdentity;
import org.ddp4j.distributed.store.HashStore;
import org.ddp4j.internal.NcclNatives;
import org.ddp4j.tensor.Device;
import org.ddp4j.tensor.Tensor;
import org.junit.jupiter.api.Test;

/** The NCCL backend's checks that need no GPU: shared GPUs, CPU tensors, no GPU at all. */
class ProcessGroupNcclTest {
    private static final Duration TIMEOUT = Duration.ofSeconds(10);

    private static DeviceIdentity gpu(String host, String uuid, String pci, int index) {
        return new DeviceIdentity(host, uuid, pci, "cuda:" + index);
    }

    @Test
    void ranksOnDistinctGpusPass() {
        assertNull(ProcessGroupNccl.sharedDeviceError(List.of(
                gpu("node-a", "GPU-aaaa", "0000:3b:00.0", 0),
                gpu("node-a", "GPU-bbbb", "0000:5e:00.0", 1),
                gpu("node-b", "GPU-cccc", "0000:3b:00.0", 0)))); // same bus id, other machine
        assertNull(ProcessGroupNccl.sharedDeviceError(List.of(gpu("node-a", "GPU-aaaa", "0000:3b:00.0", 0))));
    }

    @Test
    void twoRanksOnOneGpuAreNamed() {
        String m = ProcessGroupNccl.sharedDeviceError(List.of(
                gpu("node-a", "GPU-aaaa", "0000:3b:00.0", 0),
                gpu("node-a", "GPU-bbbb", "0000:5e:00.0", 1),
                gpu("node-a", "GPU-aaaa", "0000:3b:00.0", 0)));
        assertTrue(m != null && m.contains("ranks 0 and 2"), m);
        assertTrue(m.contains("GPU-aaaa") && m.contains("cuda:0") && m.contains("node-a"), m);
        assertTrue(m.contains("one GPU per rank"), m);
    }

    @Test
    void theSameGpuSeenUnderDifferentIndicesIsCaught() {
        // CUDA_VISIBLE_DEVICES differs between the ranks: cuda:0 and cuda:1 are one physical GPU.
        String m = ProcessGroupNccl.sharedDeviceError(List.of(
                gpu("node-a", "GPU-bbbb", "0000:5e:00.0", 1), gpu("node-a", "GPU-bbbb", "0000:5e:00.0", 0)));
        assertTrue(m != null && m.contains("ranks 0 and 1") && m.contains("cuda:1") && m.contains("cuda:0"), m);
    }

    @Test
    void withoutUuidsTheHostAndBusIdDecide() {
        assertNull(ProcessGroupNccl.sharedDeviceError(List.of(
                gpu("node-a", "", "0000:3b:00.0", 0), gpu("node-b", "", "0000:3b:00.0", 0))));
        String m = ProcessGroupNccl.sharedDeviceError(List.of(
                gpu("node-a", "", "0000:3b:00.0", 0), gpu("node-a", "", "0000:3b:00.0", 0)));
        assertTrue(m != null && m.contains("ranks 0 and 1") && m.contains("0000:3b:00.0"), m);
    }

    @Test
    void deviceRecordsRoundTripThroughTheStore() {
        DeviceIdentity d = gpu("node-a", "GPU-aaaa", "0000:3b:00.0", 3);
        assertEquals(d, DeviceIdentity.decode(d.encode()));
        assertThrows(DistributedException.class, () -> DeviceIdentity.decode("garbage".getBytes()));
    }

    @Test
    void aCpuTensorIsRejectedBeforeNativeCode() {
        try (Tensor t = Tensor.of(new float[] {1, 2, 3}, 3)) {
            var e = assertThrows(IllegalArgumentException.class,
                    () -> ProcessGroupNccl.checkOnDevice("allReduce", "tensor", t, Device.cuda(0)));
            String m = e.getMessage();
            assertTrue(m.startsWith("allReduce:"), m);
            assertTrue(m.contains("on cpu") && m.contains("cuda:0"), "names both devices: " + m);
            assertTrue(m.contains("tensor.to(Device.cuda(0))"), "says what to do: " + m);
        }
    }

    @Test
    void aCpuDeviceIsRejected() {
        var e = assertThrows(IllegalArgumentException.class,
                () -> new ProcessGroupNccl(new HashStore(), 0, 1, TIMEOUT, Device.CPU));
        assertTrue(e.getMessage().contains("gloo"), e.getMessage());
    }

    @Test
    void withoutNcclTheErrorSaysWhereItComesFrom() {
        // Loading NCCL needs no GPU, only the CUDA library. Where NCCL is installed this checks nothing.
        assumeTrue(Cuda.unavailableReason() == null || Cuda.unavailableReason().startsWith("no CUDA device"),
                "no CUDA library in this build");
        Cuda.ensureLoaded();
        String m;
        try {
            NcclNatives.version();
            return; // NCCL is installed here
        } catch (IllegalStateException e) {
            m = e.getMessage();
        }
        assertTrue(m.startsWith("no NCCL library"), m);
        assertTrue(m.contains("DDP4J_NCCL_LIBRARY"), m);
        assertTrue(m.contains("pip install nvidia-nccl-cu13") && m.contains("libnccl2"), m);
        assertTrue(m.contains("cannot open shared object file"), "what dlopen said: " + m);
    }

    @Test
    void ncclWithoutAGpuSaysSo() {
        assumeFalse(Cuda.isAvailable(), "a GPU is visible here");
        var e = assertThrows(IllegalStateException.class,
                () -> Distributed.initProcessGroup("nccl", "tcp://127.0.0.1:1", 1, 0, TIMEOUT));
        assertTrue(e.getMessage().contains("no CUDA device"), e.getMessage());
        assertTrue(e.getMessage().contains("gloo"), "says what to use instead: " + e.getMessage());
        assertTrue(!Distributed.isInitialized());
        // Also straight through the constructor, and through env:// under a launcher (LOCAL_RANK set).
        var direct = assertThrows(IllegalStateException.class,
                () -> new ProcessGroupNccl(new HashStore(), 0, 1, TIMEOUT, Device.cuda(0)));
        assertTrue(direct.getMessage().contains("no CUDA device"), direct.getMessage());
        var env = assertThrows(IllegalStateException.class, () -> Distributed.createProcessGroup("nccl", "env://",
                -1, -1, TIMEOUT, Map.of("MASTER_ADDR", "127.0.0.1", "MASTER_PORT", "1", "WORLD_SIZE", "1", "RANK",
                        "0", "LOCAL_RANK", "0")));
        assertTrue(env.getMessage().contains("no CUDA device"), env.getMessage());
    }
}
