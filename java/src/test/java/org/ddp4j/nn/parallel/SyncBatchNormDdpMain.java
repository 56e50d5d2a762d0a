package org.ddp4j.nn.parallel;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.ddp4j.distributed.Distributed;
import org.ddp4j.nn.Module;
import org.ddp4j.nn.SyncBatchNorm;

/**
 * One rank of {@link SyncBatchNormDdpTest} (env://): converts {@link SyncBatchNormTraining#model()}
 * to SyncBatchNorm on the default group, wraps it in DDP, trains on its half of each batch and
 * writes the final state to {@code <dir>/rank<R>.txt}, a line "name v1 v2 ..." per tensor.
 */
public final class SyncBatchNormDdpMain {
    private SyncBatchNormDdpMain() {}

    public static void main(String[] args) throws Exception {
        Distributed.initProcessGroup("gloo");
        int rank = Distributed.getRank();
        int world = Distributed.getWorldSize();
        int rows = SyncBatchNormTraining.BATCH / world;
        Module model = SyncBatchNorm.convertSyncBatchnorm(SyncBatchNormTraining.model());
        Map<String, float[]> state;
        try (DistributedDataParallel ddp = new DistributedDataParallel(model)) {
            state = SyncBatchNormTraining.train(ddp, model, rank * rows, rows);
        }
        List<String> lines = new ArrayList<>();
        state.forEach((name, v) -> {
            StringBuilder line = new StringBuilder(name);
            for (float f : v) {
                line.append(' ').append(f);
            }
            lines.add(line.toString());
        });
        Files.write(Path.of(args[0], "rank" + rank + ".txt"), lines);
        Distributed.destroyProcessGroup();
    }
}
