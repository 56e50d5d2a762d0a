package org.ddp4j.nn.parallel;

import org.ddp4j.testing.Ranks;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assumptions.assumeTrue;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.ddp4j.cuda.Cuda;
import org.ddp4j.distributed.store.HashStore;
import org.ddp4j.examples.ConvNet;
import org.ddp4j.nn.CrossEntropyLoss;
import org.ddp4j.nn.Module;
import org.ddp4j.optim.SGD;
import org.ddp4j.tensor.Device;
import org.ddp4j.tensor.Generator;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;
import org.ddp4j.testing.Assertions2;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.ddp4j.distributed.ProcessGroupNccl;

/**
 * DDP on GPUs over NCCL against one process. With one GPU, DDP runs its whole communication path
 * (bucket all-reduces on the communication stream, buffer broadcasts) at world size 1 and must
 * equal plain training on the GPU; with two GPUs, two ranks on half the batch each must equal one
 * CPU process on the whole batch (as DistributedDataParallelTest does with Gloo). Skipped where
 * no GPU is visible.
 */
@Tag("gpu")
@Timeout(value = 120, unit = TimeUnit.SECONDS) // backstop above Ranks.HANG_LIMIT, which names a hung rank first
class DistributedDataParallelGpuTest {
    private static final int BATCH = 8;
    private static final int STEPS = 3;
    private static final Duration TIMEOUT = Duration.ofSeconds(60);

    private final float[] images = new Generator(7).uniform(BATCH * STEPS * 28 * 28, 0f, 1f);

    @BeforeEach
    void needsAGpu() {
        assumeTrue(Cuda.isAvailable(), () -> "GPU test skipped: " + Cuda.unavailableReason());
    }

    private Tensor images(int step, int from, int count, Device device) {
        return Tensor.ofRegion(images, (step * BATCH + from) * 28 * 28, count, 1, 28, 28).to(device);
    }

    private static Tensor labels(int step, int from, int count, Device device) {
        long[] y = new long[count];
        for (int i = 0; i < count; i++) {
            y[i] = ((step * BATCH + from + i) * 7 + 3) % 10;
        }
        return Tensor.ofLongs(y, count).to(device);
    }

    /** Trains model (already on device) for STEPS steps; each step's batch is split in `parts` forwards. */
    private Map<String, float[]> train(Module model, Device device, int parts, int rank, int world) {
        CrossEntropyLoss ce = new CrossEntropyLoss();
        try (SGD opt = new SGD(model.parameters(), 0.05, 0.9, 0, 0, false)) {
            int share = BATCH / world / parts;
            for (int step = 0; step < STEPS; step++) {
                try (var scope = Tensors.scope()) {
                    opt.zeroGrad();
                    Tensor total = null;
                    for (int p = 0; p < parts; p++) {
                        int from = rank * BATCH / world + p * share;
                        Tensor loss = ce.forward(model.forward(images(step, from, share, device)),
                                labels(step, from, share, device));
                        total = total == null ? loss : total.add(loss);
                    }
                    total.mul(1f / parts).backward();
                    opt.step();
                }
            }
        }
        Map<String, float[]> out = new LinkedHashMap<>();
        model.namedParameters().forEach((name, t) ->
                out.put(name.startsWith("module.") ? name.substring(7) : name, t.toFloatArray()));
        return out;
    }

    @Test
    void ddpCommunicationPathAtWorldSizeOneEqualsPlainTraining() {
        Device gpu = Device.cuda(0);
        Map<String, float[]> plain;
        try (ConvNet net = new ConvNet(10, new Generator(0))) {
            net.to(gpu);
            plain = train(net, gpu, 1, 0, 1);
        }
        try (ProcessGroupNccl group = new ProcessGroupNccl(new HashStore(TIMEOUT), 0, 1, TIMEOUT, gpu)) {
            ConvNet net = new ConvNet(10, new Generator(0));
            net.to(gpu);
            try (DistributedDataParallel ddp = new DistributedDataParallel(net, group, 1024)) { // several buckets
                ddp.setCollectivesAtWorldSizeOne(true);
                Map<String, float[]> viaDdp = train(ddp, gpu, 1, 0, 1);
                assertEquals(plain.keySet(), viaDdp.keySet());
                plain.forEach((name, expected) -> Assertions2.assertClose(expected, viaDdp.get(name), 1e-6, 1e-7, name));
            }
        }
    }

    @Test
    void twoGpuRanksEqualOneCpuProcessOnTheWholeBatch() throws Exception {
        assumeTrue(Cuda.deviceCount() >= 2, "needs two GPUs");
        Map<String, float[]> reference;
        try (ConvNet net = new ConvNet(10, new Generator(0))) {
            reference = train(net, Device.CPU, 2, 0, 1); // two halves per step, as BatchNorm sees them under DDP
        }
        HashStore store = new HashStore(TIMEOUT);
        List<Map<String, float[]>> perRank = Ranks.run(2, rank -> {
            Device gpu = Device.cuda(rank);
            try (ProcessGroupNccl group = new ProcessGroupNccl(store, rank, 2, TIMEOUT, gpu)) {
                ConvNet net = new ConvNet(10, new Generator(rank == 0 ? 0 : 99)); // DDP broadcasts rank 0's
                net.to(gpu);
                try (DistributedDataParallel ddp = new DistributedDataParallel(net, group, 1024)) {
                    return train(ddp, gpu, 1, rank, 2);
                }
            }
        });
        for (Map<String, float[]> got : perRank) {
            reference.forEach((name, expected) -> Assertions2.assertClose(expected, got.get(name), 1e-4, 1e-5, name));
        }
    }
}
