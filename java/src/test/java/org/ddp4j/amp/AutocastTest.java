package org.ddp4j.amp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.atomic.AtomicReference;
import org.ddp4j.nn.functional.LinearFunction;
import org.ddp4j.tensor.DType;
import org.ddp4j.tensor.Device;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;
import org.junit.jupiter.api.Test;

/** Autocast's scope: dtype checks, nesting, enabled=false, per-thread state, low-dtype inputs, the kernel query. */
class AutocastTest {
    @Test
    void refusesDtypesOtherThanBf16AndFp16() {
        for (DType d : new DType[] {DType.FLOAT32, DType.INT64}) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Autocast.enable(Device.CPU, d));
            assertTrue(e.getMessage().contains("DType.BFLOAT16 or DType.FLOAT16"), e.getMessage());
        }
    }

    @Test
    void scopesNestAndRestore() {
        assertEquals(DType.FLOAT32, Autocast.computeDtype(Device.CPU));
        try (var outer = Autocast.enable(Device.CPU, DType.BFLOAT16)) {
            assertEquals(DType.BFLOAT16, Autocast.computeDtype(Device.CPU));
            assertEquals(DType.FLOAT32, Autocast.computeDtype(Device.cuda(0)), "per device type");
            try (var off = Autocast.enable(Device.CPU, DType.BFLOAT16, false)) {
                assertFalse(Autocast.isEnabled(Device.CPU));
            }
            try (var inner = Autocast.enable(Device.CPU, DType.FLOAT16)) {
                assertEquals(DType.FLOAT16, Autocast.computeDtype(Device.CPU));
                assertThrows(IllegalStateException.class, outer::close, "inner scope still open");
            }
            assertEquals(DType.BFLOAT16, Autocast.computeDtype(Device.CPU));
        }
        assertFalse(Autocast.isEnabled(Device.CPU));
    }

    @Test
    void stateIsPerThread() throws Exception {
        AtomicReference<DType> seen = new AtomicReference<>();
        try (var ac = Autocast.enable(Device.CPU, DType.BFLOAT16)) {
            Thread t = new Thread(() -> seen.set(Autocast.computeDtype(Device.CPU)));
            t.start();
            t.join(10_000);
        }
        assertEquals(DType.FLOAT32, seen.get());
    }

    @Test
    void lowPrecisionInputsAreWidenedInsideAScopeAndRefusedOutside() {
        try (var scope = Tensors.scope()) {
            Tensor x = Tensor.of(new float[] {1f, 2f, 3f, 4f}, 2, 2).to(DType.BFLOAT16);
            Tensor w = Tensor.of(new float[] {1f, 0f, 0f, 1f}, 2, 2);
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> LinearFunction.apply(x, w, null));
            assertTrue(e.getMessage().contains("bfloat16"), e.getMessage());
            try (var ac = Autocast.enable(Device.CPU, DType.BFLOAT16)) {
                Tensor y = LinearFunction.apply(x, w, null);
                assertEquals(DType.FLOAT32, y.dtype());
                assertEquals(4f, y.toFloatArray()[3]);
            }
        }
    }

    @Test
    void reportsTheKernelThatRuns() {
        Autocast.CpuKernel k = Autocast.cpuKernel();
        assertTrue(k == Autocast.CpuKernel.AVX512_BF16 || k == Autocast.CpuKernel.WIDEN);
        String env = System.getenv("DDP4J_CPU_BF16_KERNEL");
        if ("widen".equals(env)) {
            assertEquals(Autocast.CpuKernel.WIDEN, k, "DDP4J_CPU_BF16_KERNEL=widen forces the fallback");
        } else if (AmpNativesAccess.cpuHasBf16()) {
            assertEquals(Autocast.CpuKernel.AVX512_BF16, k, "auto picks vdpbf16ps on a CPU with AVX512-BF16");
        } else {
            assertEquals(Autocast.CpuKernel.WIDEN, k, "auto falls back where the CPU has no AVX512-BF16");
        }
    }
}
