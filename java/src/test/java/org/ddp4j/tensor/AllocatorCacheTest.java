package org.ddp4j.tensor;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import org.ddp4j.testing.LiveBytes;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The caching allocator's cache: {@link Tensors#emptyCache()} gives back what closed tensors left
 * and leaves live ones alone; a cache limit bounds what it keeps.
 *
 * <p>The tensors here are small blocks (under 1 MiB), which the cache gives back whole. A large
 * block that another live tensor holds (an earlier test's, in this JVM) can keep the rest of its
 * mapped segment free but mapped: that rest counts as cached and no call returns it. So the checks
 * count from the cache as {@code emptyCache} leaves it when the test starts.
 */
class AllocatorCacheTest {
    private long floor;

    @BeforeEach
    void emptyTheCache() {
        Tensors.emptyCache();
        floor = Tensors.nativeBytesCached();
    }

    @Test
    void emptyCacheReturnsCachedBlocksAndLeavesLiveTensorsAlone() {
        long inUse = LiveBytes.onThisThread();
        try (Tensor kept = Tensor.of(new float[4096], 4096)) {
            try (Tensor freed = Tensor.of(new float[8192], 8192)) {
                assertEquals(inUse + 4 * (4096 + 8192), LiveBytes.onThisThread());
            }
            assertTrue(Tensors.nativeBytesCached() >= floor + 4 * 8192);
            Tensors.emptyCache();
            assertEquals(floor, Tensors.nativeBytesCached());
            assertEquals(inUse + 4 * 4096, LiveBytes.onThisThread());
            long before = Tensors.nativeAllocationCount();
            try (Tensor again = Tensor.of(new float[8192], 8192)) {
                assertEquals(before + 1, Tensors.nativeAllocationCount(), "an emptied cache serves nothing");
            }
        }
    }

    @Test
    void cacheLimitBoundsTheCache() {
        long old = Tensors.nativeCacheLimit();
        try {
            Tensors.setNativeCacheLimit(floor + 64 * 1024);
            List<Tensor> tensors = new ArrayList<>();
            for (int i = 0; i < 8; i++) {
                tensors.add(Tensor.of(new float[16 * 1024], 16 * 1024)); // 64 KiB each
            }
            tensors.forEach(Tensor::close);
            long cached = Tensors.nativeBytesCached();
            assertTrue(cached > floor && cached <= floor + 64 * 1024, "cached " + cached + ", floor " + floor);
            Tensors.setNativeCacheLimit(0);
            assertEquals(floor, Tensors.nativeBytesCached());
        } finally {
            Tensors.setNativeCacheLimit(old);
        }
    }
}
