package org.ddp4j.distributed;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The old imports keep working: the deprecated names at org.ddp4j.distributed are the new classes. */
@SuppressWarnings("deprecation")
class DeprecatedHomesTest {
    @Test
    void theOldSamplerIsTheNewOne() {
        var old = new DistributedSampler(10, 3, 1, true, 7, false);
        var current = new org.ddp4j.data.DistributedSampler(10, 3, 1, true, 7, false);
        old.setEpoch(2);
        current.setEpoch(2);
        assertTrue(old instanceof org.ddp4j.data.DistributedSampler);
        assertEquals(list(current), list(old));
        assertEquals(4, list(old).size());
    }

    @Test
    void theOldDdpAndItsOptionsAreTheNewOnes() {
        assertTrue(org.ddp4j.nn.parallel.DistributedDataParallel.class.isAssignableFrom(DistributedDataParallel.class));
        assertEquals(org.ddp4j.nn.parallel.DistributedDataParallelOptions.defaults(),
                DistributedDataParallelOptions.defaults().bucketCapMb(25));
    }

    private static List<Integer> list(Iterable<Integer> sampler) {
        List<Integer> out = new ArrayList<>();
        sampler.forEach(out::add);
        return out;
    }
}
