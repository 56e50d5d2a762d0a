package org.ddp4j.distributed;

import org.ddp4j.testing.Ranks;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.ddp4j.cuda.Cuda;
import org.ddp4j.distributed.store.HashStore;
import org.ddp4j.tensor.DType;
import org.ddp4j.tensor.Device;
import org.ddp4j.tensor.Tensor;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The NCCL backend on real GPUs: every collective at world size 1, and at world size 2 (two
 * threads, two GPUs, a HashStore) when two GPUs are visible; a timeout; CPU-tensor rejection.
 * Skips itself without a GPU. NCCL must be loadable (DDP4J_NCCL_LIBRARY or libnccl.so.2).
 */
@Tag("gpu")
@Timeout(value = 120, unit = TimeUnit.SECONDS) // backstop above Ranks.HANG_LIMIT, which names a hung rank first
class ProcessGroupNcclGpuTest {
    private static final Duration TIMEOUT = Duration.ofSeconds(60);

    @BeforeEach
    void needsAGpu() {
        assumeTrue(Cuda.isAvailable(), "no CUDA device: GPU test skipped");
    }

    private static Tensor onGpu(Device d, float... values) {
        try (Tensor cpu = Tensor.of(values, values.length)) {
            return cpu.to(d);
        }
    }

    @Test
    void everyCollectiveAtWorldSizeOne() {
        Device d = Device.cuda(0);
        try (ProcessGroupNccl g = new ProcessGroupNccl(new HashStore(), 0, 1, TIMEOUT, d)) {
            assertEquals("nccl", g.backend());
            assertEquals(d, g.device());
            for (ReduceOp op : ReduceOp.values()) {
                try (Tensor t = onGpu(d, 1.5f, -2f, 3f)) {
                    g.allReduce(t, op).await();
                    assertArrayEquals(new float[] {1.5f, -2f, 3f}, t.toFloatArray(), 0f, op.toString());
                }
            }
            try (Tensor t = onGpu(d, 4f, 5f)) {
                g.broadcast(t, 0).awaitBlocking();
                assertArrayEquals(new float[] {4f, 5f}, t.toFloatArray(), 0f);
            }
            try (Tensor in = onGpu(d, 7f, 8f); Tensor out = Tensor.full(0, DType.FLOAT32, d, 2)) {
                g.allGatherIntoTensor(out, in).await(Duration.ofSeconds(30));
                assertArrayEquals(new float[] {7f, 8f}, out.toFloatArray(), 0f);
            }
            try (Tensor in = onGpu(d, 9f); Tensor out = Tensor.full(0, DType.FLOAT32, d, 1)) {
                Work w = g.allGather(List.of(out), in);
                w.await();
                assertArrayEquals(new float[] {9f}, out.toFloatArray(), 0f);
                w.awaitBlocking();
                assertTrue(w.isCompleted());
            }
            g.barrier().await();
            Work b = g.barrier();
            b.awaitBlocking();
            assertTrue(b.isCompleted());
            try (Tensor t = onGpu(d, 2f, 3f)) {
                g.reduce(t, 0, ReduceOp.SUM).await();
                assertArrayEquals(new float[] {2f, 3f}, t.toFloatArray(), 0f);
            }
            try (Tensor in = onGpu(d, 6f, 7f); Tensor out = Tensor.full(0, DType.FLOAT32, d, 2)) {
                g.reduceScatterTensor(out, in, ReduceOp.AVG).await();
                assertArrayEquals(new float[] {6f, 7f}, out.toFloatArray(), 0f);
            }
            try (Tensor in = onGpu(d, 1f); Tensor out = Tensor.full(0, DType.FLOAT32, d, 1)) {
                g.reduceScatter(out, List.of(in), ReduceOp.MAX).await();
                assertArrayEquals(new float[] {1f}, out.toFloatArray(), 0f);
            }
        }
    }

    @Test
    void aCpuTensorIsRejected() {
        Device d = Device.cuda(0);
        try (ProcessGroupNccl g = new ProcessGroupNccl(new HashStore(), 0, 1, TIMEOUT, d);
                Tensor cpu = Tensor.of(new float[] {1}, 1)) {
            var e = assertThrows(IllegalArgumentException.class, () -> g.allReduce(cpu, ReduceOp.SUM));
            assertTrue(e.getMessage().contains("cpu") && e.getMessage().contains("cuda:0"), e.getMessage());
            assertThrows(IllegalArgumentException.class, () -> g.broadcast(cpu, 0));
        }
    }

    @Test
    void twoRanksOnTwoGpus() throws Exception {
        assumeTrue(Cuda.deviceCount() >= 2, "needs two GPUs");
        HashStore store = new HashStore();
        List<float[]> results = Ranks.run(2, rank -> {
            Device d = Device.cuda(rank);
            try (ProcessGroupNccl g = new ProcessGroupNccl(store, rank, 2, TIMEOUT, d)) {
                List<Float> out = new ArrayList<>();
                for (ReduceOp op : ReduceOp.values()) {
                    try (Tensor t = onGpu(d, rank + 1f)) {
                        g.allReduce(t, op).await();
                        out.add(t.toFloatArray()[0]);
                    }
                }
                try (Tensor t = onGpu(d, rank == 1 ? 42f : 0f)) {
                    g.broadcast(t, 1).await();
                    out.add(t.toFloatArray()[0]);
                }
                try (Tensor in = onGpu(d, 10f * rank, 10f * rank + 1); Tensor flat = Tensor.full(0, DType.FLOAT32, d, 4);
                        Tensor o0 = Tensor.full(0, DType.FLOAT32, d, 2); Tensor o1 = Tensor.full(0, DType.FLOAT32, d, 2)) {
                    g.allGatherIntoTensor(flat, in).await();
                    g.allGather(List.of(o0, o1), in).await();
                    for (float f : flat.toFloatArray()) {
                        out.add(f);
                    }
                    for (float f : o1.toFloatArray()) {
                        out.add(f);
                    }
                }
                try (Tensor t = onGpu(d, rank + 1f, 10f)) {
                    g.reduce(t, 1, ReduceOp.SUM).await();
                    out.add(t.toFloatArray()[0]); // rank 0: its own 1, rank 1: 3
                }
                try (Tensor in = onGpu(d, rank + 1f, 10f * (rank + 1)); Tensor o = Tensor.full(0, DType.FLOAT32, d, 1)) {
                    g.reduceScatterTensor(o, in, ReduceOp.SUM).await();
                    out.add(o.toFloatArray()[0]); // rank 0: 1 + 2, rank 1: 10 + 20
                }
                try (Tensor t = onGpu(d, 5f + rank, 6f)) {
                    // rank 0 receives first: NCCL's unbatched p2p on one stream (see ProcessGroup#send)
                    if (rank == 0) {
                        g.recv(t, 1, 0).await();
                    } else {
                        g.send(t, 0, 0).await();
                    }
                    out.add(t.toFloatArray()[0]); // 6 on both: rank 1's
                }
                g.barrier().await();
                float[] r = new float[out.size()];
                for (int i = 0; i < r.length; i++) {
                    r[i] = out.get(i);
                }
                return r;
            }
        });
        // Values 1 and 2: SUM 3, AVG 1.5, PRODUCT 2, MIN 1, MAX 2; broadcast 42; gathers [0 1 10 11], rank 1's [10 11].
        // Then reduce to rank 1 (rank 0 keeps 1, rank 1 gets 3), reduceScatter (3 and 30), a send from rank 1 (6).
        float[] common = {3f, 1.5f, 2f, 1f, 2f, 42f, 0f, 1f, 10f, 11f, 10f, 11f};
        float[] expected0 = java.util.Arrays.copyOf(common, common.length + 3);
        float[] expected1 = java.util.Arrays.copyOf(common, common.length + 3);
        expected0[common.length] = 1f;
        expected1[common.length] = 3f;
        expected0[common.length + 1] = 3f;
        expected1[common.length + 1] = 30f;
        expected0[common.length + 2] = 6f;
        expected1[common.length + 2] = 6f;
        assertArrayEquals(expected0, results.get(0), 0f);
        assertArrayEquals(expected1, results.get(1), 0f);
    }

    @Test
    void aCollectiveThatAPeerNeverJoinsTimesOutAndPoisonsTheGroup() throws Exception {
        assumeTrue(Cuda.deviceCount() >= 2, "needs two GPUs");
        HashStore store = new HashStore();
        Duration shortTimeout = Duration.ofSeconds(3);
        List<String> messages = Ranks.run(2, rank -> {
            Device d = Device.cuda(rank);
            try (ProcessGroupNccl g = new ProcessGroupNccl(store, rank, 2, shortTimeout, d);
                    Tensor t = onGpu(d, 1f, 2f, 3f)) {
                g.barrier().await();
                if (rank == 1) {
                    return "skipped"; // rank 1 never calls the all-reduce
                }
                Work w = g.allReduce(t, ReduceOp.SUM);
                var e = assertThrows(DistributedTimeoutException.class, w::awaitBlocking);
                var later = assertThrows(DistributedException.class, () -> g.allReduce(t, ReduceOp.SUM));
                assertTrue(later.getMessage().contains("aborted"), later.getMessage());
                return e.getMessage();
            }
        });
        String m = messages.get(0);
        assertTrue(m.contains("allReduce(SUM)") && m.contains("3 float32 elements") && m.contains("12 bytes"), m);
        assertTrue(m.contains("3 s"), "names the timeout: " + m);
    }
}
