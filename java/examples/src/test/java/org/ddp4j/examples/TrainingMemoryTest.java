package org.ddp4j.examples;

import org.ddp4j.testing.LiveBytes;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import java.time.Duration;
import org.ddp4j.nn.parallel.DistributedDataParallel;
import org.ddp4j.distributed.ProcessGroupGloo;
import org.ddp4j.distributed.store.HashStore;
import org.ddp4j.nn.CrossEntropyLoss;
import org.ddp4j.optim.SGD;
import org.ddp4j.tensor.Generator;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;
import org.junit.jupiter.api.Test;

/** Native memory in use is the same after every ConvNet training step (under DDP): nothing leaks per step. */
class TrainingMemoryTest {

    @Test
    void nativeBytesReturnToTheSameValueAfterEveryStep() {
        float[] x = new Generator(3).uniform(16 * 28 * 28, 0f, 1f);
        long[] y = new long[16];
        for (int i = 0; i < y.length; i++) {
            y[i] = i % 10;
        }
        long before = LiveBytes.onThisThread();
        try (var group = new ProcessGroupGloo(new HashStore(), 0, 1, Duration.ofSeconds(30));
                var model = new DistributedDataParallel(new ConvNet(10, new Generator(0)), group,
                        DistributedDataParallel.DEFAULT_BUCKET_CAP_BYTES);
                var opt = new SGD(model.parameters(), 0.05, 0.9, 0, 0, false)) {
            CrossEntropyLoss ce = new CrossEntropyLoss();
            long afterFirst = -1;
            for (int step = 0; step < 6; step++) {
                try (var scope = Tensors.scope()) {
                    Tensor loss = ce.forward(model.forward(Tensor.of(x, 16, 1, 28, 28)), Tensor.ofLongs(y, 16));
                    opt.zeroGrad();
                    loss.backward();
                    opt.step();
                }
                long now = LiveBytes.onThisThread();
                if (step == 0) {
                    afterFirst = now; // parameters, bucketed gradients and momentum buffers now exist
                } else {
                    assertEquals(afterFirst, now, "native bytes changed after step " + step);
                }
            }
            assertTrue(afterFirst > before);
        }
        assertEquals(before, LiveBytes.onThisThread(), "closing the model and optimiser frees everything");
    }
}
