package org.ddp4j.models.gpt2;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.ddp4j.amp.Autocast;
import org.ddp4j.nn.Module;
import org.ddp4j.nn.parallel.DistributedDataParallel;
import org.ddp4j.nn.utils.ClipGradNorm;
import org.ddp4j.optim.AdamW;
import org.ddp4j.tensor.DType;
import org.ddp4j.tensor.Device;
import org.ddp4j.tensor.Generator;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;
import org.ddp4j.testing.Assertions2;
import org.ddp4j.testing.Ranks;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A 2-layer GPT-2 trained under DistributedDataParallel on 2 ranks (threads, Gloo and shared memory
 * over a HashStore) equals one process on both ranks' batches: 3 steps of AdamW with nanoGPT's
 * parameter groups and gradient clipping, every parameter within 1e-5 in float32 and 1e-2 relative
 * under bfloat16 autocast. The tied wte / lm_head weight is all-reduced once.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class GPT2DdpTest {
    private static final GPT2Config CONFIG = new GPT2Config(96, 16, 32, 2, 4, 128, 0, 0, 0, 1e-5, 0.02);
    private static final int ROWS_PER_RANK = 2;
    private static final int T = 12;
    private static final int STEPS = 3;

    @Test
    void twoRanksEqualOneProcessInFloat32() throws Exception {
        compare(false, 1e-5, 1e-6);
    }

    @Test
    void twoRanksEqualOneProcessUnderBfloat16Autocast() throws Exception {
        compare(true, 1e-2, 1e-4);
    }

    private static void compare(boolean autocast, double rtol, double atol) throws Exception {
        List<float[]> expected;
        try (GPT2LMHeadModel single = new GPT2LMHeadModel(CONFIG, new Generator(5))) {
            expected = train(single, single, 0, 2, autocast);
        }
        List<List<float[]>> ranks = Ranks.withGroups(2, Duration.ofSeconds(60), (rank, group) -> {
            // rank 1 starts from other weights: DDP broadcasts rank 0's
            try (GPT2LMHeadModel net = new GPT2LMHeadModel(CONFIG, new Generator(rank == 0 ? 5 : 77))) {
                DistributedDataParallel ddp = new DistributedDataParallel(net, group,
                        DistributedDataParallel.DEFAULT_BUCKET_CAP_BYTES);
                assertEquals(net.parameters().size(), ddp.parameters().size(), "the tied weight counted once");
                List<float[]> out = train(ddp, net, rank, 1, autocast);
                ddp.close();
                return out;
            }
        });
        for (int rank = 0; rank < 2; rank++) {
            for (int i = 0; i < expected.size(); i++) {
                Assertions2.assertClose(expected.get(i), ranks.get(rank).get(i), rtol, atol,
                        "rank " + rank + ", parameter " + i + (autocast ? " (bf16 autocast)" : ""));
            }
        }
    }

    /**
     * STEPS optimizer steps of model (the DDP wrapper or the bare model) on rows
     * [firstShard · ROWS_PER_RANK, (firstShard + shards) · ROWS_PER_RANK) of each step's batch.
     */
    private static List<float[]> train(Module model, GPT2LMHeadModel net, int firstShard, int shards, boolean autocast) {
        // eps 1e-4, not 1e-8: the key projection's bias has a gradient that is zero up to rounding
        // (softmax ignores what it adds to a whole row of scores), and Adam would turn that rounding
        // into full-size steps of noise, different for every order of summation
        AdamW opt = new AdamW(net.parameterGroups(0.1), AdamW.Options.defaults().lr(1e-2).eps(1e-4));
        for (int step = 0; step < STEPS; step++) {
            try (var scope = Tensors.scope()) {
                opt.zeroGrad();
                long[][] batch = batch(step);
                int rows = shards * ROWS_PER_RANK;
                long[] x = new long[rows * T];
                long[] y = new long[rows * T];
                for (int r = 0; r < rows; r++) {
                    System.arraycopy(batch[firstShard * ROWS_PER_RANK + r], 0, x, r * T, T);
                    System.arraycopy(batch[firstShard * ROWS_PER_RANK + r], 1, y, r * T, T);
                }
                Tensor loss;
                try (var ac = Autocast.enable(Device.CPU, DType.BFLOAT16, autocast)) {
                    Tensor logits = model.forward(Tensor.ofLongs(x, rows, T));
                    loss = org.ddp4j.nn.functional.Functional.crossEntropy(logits.view(-1, CONFIG.vocabSize()),
                            Tensor.ofLongs(y, rows * T), GPT2LMHeadModel.IGNORE_INDEX);
                }
                loss.backward();
                ClipGradNorm.clipGradNorm(net.parameters(), 1.0);
                opt.step();
            }
        }
        List<float[]> out = new ArrayList<>();
        net.parameters().forEach(p -> out.add(p.toFloatArray()));
        opt.close();
        return out;
    }

    /** Step's 4 rows of T + 1 tokens, the same on every rank. */
    private static long[][] batch(int step) {
        Generator g = new Generator(100 + step);
        long[][] rows = new long[2 * ROWS_PER_RANK][T + 1];
        for (long[] row : rows) {
            for (int i = 0; i <= T; i++) {
                row[i] = g.nextInt(CONFIG.vocabSize());
            }
        }
        return rows;
    }
}
