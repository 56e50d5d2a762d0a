package org.ddp4j.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeFalse;

import org.ddp4j.nn.Linear;
import org.ddp4j.tensor.DType;
import org.ddp4j.tensor.Device;
import org.ddp4j.tensor.Tensor;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * On a machine without a GPU (CI): the CUDA library loads (its runtime is linked in statically)
 * and every GPU request fails with "no CUDA device", leaving CPU state untouched. Skipped where a
 * GPU is visible (CudaGpuTest covers that case).
 */
class CudaUnavailableTest {

    @BeforeEach
    void onlyWithoutAGpu() {
        assumeFalse(Cuda.isAvailable(), "a GPU is visible here");
    }

    @Test
    void theLibraryLoadsAndReportsNoDevice() {
        Cuda.ensureLoaded(); // no UnsatisfiedLinkError: loading needs no driver
        String reason = Cuda.unavailableReason();
        assertNotNull(reason);
        assertTrue(reason.startsWith("no CUDA device"), reason);
        IllegalStateException e = assertThrows(IllegalStateException.class, Cuda::deviceCount);
        assertTrue(e.getMessage().contains("no CUDA device"), e.getMessage());
        assertTrue(e.getMessage().contains("device cpu"), "says what to do instead: " + e.getMessage());
    }

    @Test
    void movingATensorToAGpuFailsClearly() {
        try (Tensor t = Tensor.of(new float[] {1, 2}, 2)) {
            IllegalStateException e = assertThrows(IllegalStateException.class, () -> t.to(Device.cuda(0)));
            assertTrue(e.getMessage().contains("no CUDA device"), e.getMessage());
            assertEquals(Device.CPU, t.device());
        }
        assertThrows(IllegalStateException.class, () -> Tensor.full(0, DType.FLOAT32, Device.cuda(0), 3));
    }

    @Test
    void movingAModuleFailsAndLeavesItOnTheCpu() {
        try (Linear layer = new Linear(3, 2)) {
            float[] before = layer.weight().toFloatArray();
            assertThrows(IllegalStateException.class, () -> layer.to(Device.cuda(0)));
            assertEquals(Device.CPU, layer.weight().device());
            assertFalse(layer.weight().isClosed());
            assertEquals(before.length, layer.weight().toFloatArray().length);
        }
    }
}
