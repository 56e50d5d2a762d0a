package org.ddp4j.nn.parallel;

import org.ddp4j.testing.Ranks;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.time.Duration;
import java.util.List;
import org.ddp4j.nn.Linear;
import org.ddp4j.tensor.Generator;
import org.junit.jupiter.api.Test;

/**
 * DistributedDataParallel built from DistributedDataParallelOptions on 2 thread-ranks: the group
 * and bucket cap are used (rank 1's parameters arrive from rank 0), and it prints as PyTorch's
 * DDP wrapper.
 */
class DistributedDataParallelOptionsTest {
    @Test
    void optionsChooseTheGroupAndWrapLikeThePositionalConstructor() throws Exception {
        List<float[]> weights = Ranks.withGroups(2, Duration.ofSeconds(30), (rank, group) -> {
            try (var ddp = new DistributedDataParallel(new Linear(3, 2, true, new Generator(rank)),
                    DistributedDataParallelOptions.defaults().processGroup(group).bucketCapMb(0.5))) {
                assertEquals("DistributedDataParallel(\n  (module): Linear(in_features=3, out_features=2, bias=True)\n)",
                        ddp.toString());
                assertEquals(group, ddp.processGroup());
                return ddp.parameters().get(0).toFloatArray();
            }
        });
        assertArrayEquals(weights.get(0), weights.get(1), "rank 1 did not receive rank 0's parameters");
    }
}
