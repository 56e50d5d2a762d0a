package org.ddp4j.nn.parallel;

import static org.ddp4j.testing.Assertions2.assertClose;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.ddp4j.nn.Module;
import org.ddp4j.testing.RankProcesses;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A model converted with SyncBatchNorm.convertSyncBatchnorm and trained under DDP on 2 ranks (JVMs,
 * default group over env://) with half of each batch each ends with the same state on both ranks,
 * and equals one process training the BatchNorm2d model on the whole batches: with equal halves,
 * DDP's average of the ranks' gradients of their mean losses is the gradient of the whole batch's
 * mean loss once the batch norms use the whole batch's statistics (and not otherwise).
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class SyncBatchNormDdpTest {
    /** Float sums over two ranks' halves are ordered differently than over the whole batch; 3 steps. */
    private static final double RTOL = 1e-5;
    private static final double ATOL = 1e-5;

    @Test
    void twoRanksTrainAsOneProcessOnTheWholeBatch(@TempDir Path dir) throws Exception {
        RankProcesses.run(SyncBatchNormDdpMain.class, 2, Map.of(), Duration.ofSeconds(90), rank -> 0, dir.toString());
        List<String> rank0 = Files.readAllLines(dir.resolve("rank0.txt"));
        List<String> rank1 = Files.readAllLines(dir.resolve("rank1.txt"));
        assertEquals(rank0.size(), rank1.size());
        for (int k = 0; k < rank0.size(); k++) {
            String name = rank0.get(k).split(" ", 2)[0];
            assertTrue(rank0.get(k).equals(rank1.get(k)), "rank 1's " + name + " differs from rank 0's");
        }
        Map<String, float[]> reference;
        try (Module model = SyncBatchNormTraining.model()) {
            reference = SyncBatchNormTraining.train(model, model, 0, SyncBatchNormTraining.BATCH);
        }
        assertEquals(reference.size(), rank0.size());
        int i = 0;
        for (Map.Entry<String, float[]> e : reference.entrySet()) {
            String[] parts = rank0.get(i++).split(" ");
            assertEquals(e.getKey(), parts[0]);
            float[] got = new float[parts.length - 1];
            for (int k = 0; k < got.length; k++) {
                got[k] = Float.parseFloat(parts[k + 1]);
            }
            assertClose(e.getValue(), got, RTOL, ATOL, e.getKey());
        }
    }
}
