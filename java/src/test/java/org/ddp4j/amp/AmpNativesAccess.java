package org.ddp4j.amp;

import org.ddp4j.internal.AmpNatives;

/** Test access to the CPU kernel switch (AmpNatives.setCpuKernel), restoring the process default. */
final class AmpNativesAccess {
    private static final String DEFAULT = AmpNatives.cpuKernel();

    private AmpNativesAccess() {}

    /** Whether this CPU can run the vdpbf16ps kernel. */
    static boolean cpuHasBf16() {
        try {
            AmpNatives.setCpuKernel("avx512bf16");
            return true;
        } catch (IllegalArgumentException e) {
            return false;
        } finally {
            AmpNatives.setCpuKernel(DEFAULT);
        }
    }

    static void force(String kernel) {
        AmpNatives.setCpuKernel(kernel);
    }

    static void reset() {
        AmpNatives.setCpuKernel(DEFAULT);
    }
}
