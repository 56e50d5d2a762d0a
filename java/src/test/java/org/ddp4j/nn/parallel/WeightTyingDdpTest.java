package org.ddp4j.nn.parallel;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.ddp4j.distributed.ProcessGroup;
import org.ddp4j.distributed.ProcessGroupGloo;
import org.ddp4j.distributed.store.HashStore;
import org.ddp4j.nn.Embedding;
import org.ddp4j.nn.Linear;
import org.ddp4j.nn.Module;
import org.ddp4j.optim.SGD;
import org.ddp4j.tensor.Generator;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;
import org.ddp4j.testing.Assertions2;
import org.junit.jupiter.api.Test;

/**
 * Weight tying as PyTorch's GPT-2 does it (the output head's weight is the token embedding's): one
 * parameter listed once, stored under both names, its gradient the sum of both uses, and
 * DistributedDataParallel on 2 ranks (threads, Gloo over a HashStore) equal to one process on the
 * whole batch.
 */
class WeightTyingDdpTest {
    private static final Duration TIMEOUT = Duration.ofSeconds(60);
    private static final long[][] TOKENS = {{1, 4, 4, 0, 6, 2}, {3, 3, 5, 1, 0, 6}};

    /** Embedding 7 x 5 whose weight the head [7, 5] reuses: logits = head(wte(tokens)). */
    static final class TiedModel extends Module {
        final Embedding wte;
        final Linear head;

        TiedModel(long seed) {
            Generator g = new Generator(seed);
            wte = registerModule("wte", new Embedding(7, 5, g));
            head = registerModule("lm_head", new Linear(5, 7, false, g));
            head.setParameter("weight", wte.weight());
        }

        @Override
        public Tensor forward(Tensor tokens) {
            return head.forward(wte.forward(tokens));
        }
    }

    private static Tensor loss(Module model, long[] tokens) {
        Tensor logits = model.forward(Tensor.ofLongs(tokens, tokens.length));
        float[] r = new Generator(7).uniform((int) logits.numel(), -1f, 1f);
        return logits.mul(Tensor.of(r, logits.shape())).sum();
    }

    @Test
    void aTiedParameterIsListedOnceStoredTwiceAndSumsBothGradients() {
        try (TiedModel model = new TiedModel(1); Embedding e = new Embedding(7, 5, new Generator(1));
                Linear l = new Linear(5, 7, false, new Generator(2))) {
            assertSame(model.wte.weight(), model.head.weight());
            assertEquals(List.of("wte.weight"), new ArrayList<>(model.namedParameters().keySet()));
            assertEquals(1, model.parameters().size());
            assertEquals(List.of("wte.weight", "lm_head.weight"), new ArrayList<>(model.stateDict().keySet()));
            try (var scope = Tensors.scope()) {
                // Untied copies of the same values: the tied gradient is the sum of the two.
                e.weight().copyFrom(model.wte.weight());
                l.weight().copyFrom(model.wte.weight());
                loss(model, TOKENS[0]).backward();
                Tensor x = Tensor.ofLongs(TOKENS[0], TOKENS[0].length);
                Tensor logits = l.forward(e.forward(x));
                float[] r = new Generator(7).uniform((int) logits.numel(), -1f, 1f);
                logits.mul(Tensor.of(r, logits.shape())).sum().backward();
                float[] expected = e.weight().grad().add(l.weight().grad()).toFloatArray();
                Assertions2.assertClose(expected, model.wte.weight().grad().toFloatArray(), 1e-6, 1e-6, "tied gradient");
                // Both names load, into the one tensor.
                Map<String, Tensor> state = Map.of("wte.weight", Tensor.ones(7, 5), "lm_head.weight", Tensor.ones(7, 5));
                model.loadStateDict(state);
                assertArrayEquals(Tensor.ones(7, 5).toFloatArray(), model.head.weight().toFloatArray());
            }
            model.zeroGrad(true);
            e.zeroGrad(true);
            l.zeroGrad(true);
        }
    }

    @Test
    void twoRanksReduceTheTiedParameterOnceAndMatchOneProcess() throws Exception {
        float[] expected;
        try (TiedModel single = new TiedModel(1)) {
            SGD opt = new SGD(single.parameters(), 0.1);
            for (int step = 0; step < 2; step++) {
                try (var scope = Tensors.scope()) {
                    opt.zeroGrad();
                    // Sum over both ranks' batches, halved: DDP averages the ranks' gradients.
                    loss(single, TOKENS[0]).add(loss(single, TOKENS[1])).mul(0.5f).backward();
                    opt.step();
                }
            }
            expected = single.wte.weight().toFloatArray();
            opt.close();
        }
        HashStore store = new HashStore(TIMEOUT);
        ExecutorService pool = Executors.newFixedThreadPool(2);
        try {
            List<Future<float[]>> futures = new ArrayList<>();
            for (int r = 0; r < 2; r++) {
                final int rank = r;
                futures.add(pool.submit(() -> {
                    try (ProcessGroup group = new ProcessGroupGloo(store, rank, 2, TIMEOUT)) {
                        TiedModel net = new TiedModel(rank == 0 ? 1 : 99); // rank 0's weights are broadcast
                        DistributedDataParallel model = new DistributedDataParallel(net, group,
                                DistributedDataParallel.DEFAULT_BUCKET_CAP_BYTES);
                        assertEquals(1, model.parameters().size());
                        SGD opt = new SGD(model.parameters(), 0.1);
                        for (int step = 0; step < 2; step++) {
                            try (var scope = Tensors.scope()) {
                                opt.zeroGrad();
                                loss(model, TOKENS[rank]).backward();
                                opt.step();
                            }
                        }
                        float[] out = net.wte.weight().toFloatArray();
                        opt.close();
                        model.close();
                        return out;
                    }
                }));
            }
            for (Future<float[]> f : futures) {
                Assertions2.assertClose(expected, f.get(TIMEOUT.toSeconds() + 30, TimeUnit.SECONDS), 1e-5, 1e-6,
                        "tied weight after 2 DDP steps");
            }
        } finally {
            pool.shutdownNow();
        }
    }
}
