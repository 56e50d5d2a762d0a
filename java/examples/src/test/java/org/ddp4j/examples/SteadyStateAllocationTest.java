package org.ddp4j.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.ddp4j.data.Batch;
import org.ddp4j.data.DataLoader;
import org.ddp4j.data.TensorDataset;
import org.ddp4j.nn.parallel.DistributedDataParallel;
import org.ddp4j.distributed.ProcessGroupGloo;
import org.ddp4j.distributed.store.HashStore;
import org.ddp4j.nn.CrossEntropyLoss;
import org.ddp4j.optim.SGD;
import org.ddp4j.tensor.Generator;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;
import org.ddp4j.vision.models.ResNet;
import org.junit.jupiter.api.Test;

/**
 * The caching allocator serves a steady-state ConvNet step (the demo's: DataLoader batch of 100,
 * DDP, SGD with momentum) entirely from its cache: no system allocation from step 3 on. So does a
 * ResNet-18 step from step 5 on, whose large blocks (activations of several MiB, split and merged
 * across sizes) then come from the same pages every step.
 */
class SteadyStateAllocationTest {
    private static final int BATCH = 100;
    private static final int STEPS = 8;

    @Test
    void steadyStateStepsMakeNoSystemAllocation() {
        List<Long> perStep = new ArrayList<>();
        try (var group = new ProcessGroupGloo(new HashStore(), 0, 1, Duration.ofSeconds(30));
                var model = new DistributedDataParallel(new ConvNet(10, new Generator(0)), group,
                        DistributedDataParallel.DEFAULT_BUCKET_CAP_BYTES);
                var opt = new SGD(model.parameters(), 0.05, 0.9, 0, 0, false)) {
            DataLoader loader = new DataLoader(dataset(BATCH * STEPS), BATCH);
            CrossEntropyLoss ce = new CrossEntropyLoss();
            for (Batch batch : loader) {
                long before = Tensors.nativeAllocationCount();
                try (batch; var scope = Tensors.scope()) {
                    Tensor loss = ce.forward(model.forward(batch.inputs()), batch.labels());
                    opt.zeroGrad();
                    loss.backward();
                    opt.step();
                    loss.item();
                }
                perStep.add(Tensors.nativeAllocationCount() - before);
            }
            assertEquals(STEPS, perStep.size());
            assertTrue(perStep.get(0) > 0, "the first step allocates from the system: " + perStep);
            for (int step = 2; step < STEPS; step++) {
                assertEquals(0L, perStep.get(step), "system allocations in step " + (step + 1) + " (per step: " + perStep + ")");
            }
            assertTrue(Tensors.nativeBytesCached() > 0, "freed step tensors stay cached");
        }
    }

    @Test
    void steadyStateResNetStepsReuseTheirPages() {
        List<Long> perStep = new ArrayList<>();
        List<Long> cachedAfter = new ArrayList<>();
        Generator g = new Generator(5);
        try (Tensor images = Tensor.of(g.uniform(8 * 3 * 112 * 112, -1f, 1f), 8, 3, 112, 112).keep();
                Tensor labels = Tensor.ofLongs(new long[] {0, 1, 2, 3, 4, 5, 6, 7}, 8).keep()) {
            ResNet model = ResNet.resnet18(ResNet.Options.defaults().numClasses(10));
            try (var opt = new SGD(model.parameters(), 0.01, 0.9, 0, 0, false)) {
                CrossEntropyLoss ce = new CrossEntropyLoss();
                for (int step = 0; step < 8; step++) {
                    long before = Tensors.nativeAllocationCount();
                    try (var scope = Tensors.scope()) {
                        Tensor loss = ce.forward(model.forward(images), labels);
                        opt.zeroGrad();
                        loss.backward();
                        opt.step();
                        loss.item();
                    }
                    perStep.add(Tensors.nativeAllocationCount() - before);
                    cachedAfter.add(Tensors.nativeBytesCached());
                }
            }
            // The first steps settle the segments (blocks split and merged until each request of
            // the step finds its place); from then on every step runs on the same pages.
            for (int step = 4; step < perStep.size(); step++) {
                assertEquals(0L, perStep.get(step), "system allocations in step " + (step + 1) + " (per step: " + perStep + ")");
                assertEquals(cachedAfter.get(4), cachedAfter.get(step), "cached bytes after each step: " + cachedAfter);
            }
            model.parameters().forEach(p -> {
                if (p.grad() != null) {
                    p.grad().close();
                }
            });
        }
    }

    private static TensorDataset dataset(int n) {
        float[] x = new Generator(3).uniform(n * 28 * 28, 0f, 1f);
        long[] y = new long[n];
        for (int i = 0; i < n; i++) {
            y[i] = i % 10;
        }
        try (Tensor features = Tensor.of(x, n, 1, 28, 28); Tensor labels = Tensor.ofLongs(y, n)) {
            return new TensorDataset(features, labels);
        }
    }
}
