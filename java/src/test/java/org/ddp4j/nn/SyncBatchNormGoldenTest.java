package org.ddp4j.nn;

import static org.ddp4j.testing.Assertions2.assertClose;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;
import org.ddp4j.testing.Golden;
import org.ddp4j.testing.Ranks;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * {@link SyncBatchNorm} on 2 and 3 ranks (threads, each with its own Gloo group) with unequal
 * batches, one of them empty, against one process's BatchNorm over the concatenated batch
 * (scripts/golden/sync_batch_norm_golden.py): each rank's slice of the output and of the input
 * gradient, the running statistics and num_batches_tracked after each of two steps (the same on
 * every rank), the ranks' weight and bias gradients summed (each rank's are its own sums, as
 * PyTorch's, which DDP then averages), and an eval step.
 */
class SyncBatchNormGoldenTest {
    private static final double RTOL = 1e-5;
    private static final double ATOL = 1e-5;
    private static final Golden G = Golden.load("sync_batch_norm");

    /** One rank's weight and bias gradients of each step. */
    private record Grads(List<float[]> weight, List<float[]> bias) {}

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"w2", "w3", "w2_2d"})
    void ranksTogetherEqualOneProcessOverTheWholeBatch(String name) throws Exception {
        long[] batches = G.longs(name + ".batches");
        long[] sample = G.longs(name + ".shape");
        int world = batches.length;
        int channels = (int) sample[0];
        int steps = (int) G.number("steps");
        boolean affine = G.has(name + ".weight");
        Double momentum = name.equals("w3") ? null : 0.1;
        List<Grads> grads = Ranks.withGroups(world, Duration.ofSeconds(20), (rank, group) -> {
            long first = 0;
            for (int r = 0; r < rank; r++) {
                first += batches[r];
            }
            long rows = batches[rank];
            Grads mine = new Grads(new ArrayList<>(), new ArrayList<>());
            try (var scope = Tensors.scope();
                    SyncBatchNorm bn = new SyncBatchNorm(channels, 1e-5, momentum, affine, true, group)) {
                if (affine) {
                    bn.weight().copyFrom(G.tensor(name + ".weight"));
                    bn.bias().copyFrom(G.tensor(name + ".bias"));
                }
                String where = name + " rank " + rank;
                for (int step = 0; step < steps; step++) {
                    String key = name + "." + step;
                    Tensor x = slice(key + ".x", first, rows, sample).requiresGrad(true);
                    Tensor y = bn.forward(x);
                    assertClose(slice(key + ".y", first, rows, sample), y, RTOL, ATOL, where + " step " + step + " y");
                    y.backward(slice(key + ".grad_y", first, rows, sample));
                    assertClose(slice(key + ".grad_x", first, rows, sample), x.grad(), RTOL, ATOL,
                            where + " step " + step + " grad_x");
                    assertClose(G.tensor(key + ".running_mean"), bn.runningMean(), RTOL, ATOL, where + " running_mean");
                    assertClose(G.tensor(key + ".running_var"), bn.runningVar(), RTOL, ATOL, where + " running_var");
                    assertEquals((long) G.number(key + ".num_batches_tracked"), bn.numBatchesTracked(), where);
                    if (affine) {
                        mine.weight().add(bn.weight().grad().toFloatArray());
                        mine.bias().add(bn.bias().grad().toFloatArray());
                        bn.weight().clearGrad();
                        bn.bias().clearGrad();
                    }
                }
                bn.eval();
                try (var noGrad = Tensors.noGrad()) {
                    Tensor y = bn.forward(slice(name + ".eval.x", first, rows, sample));
                    assertClose(slice(name + ".eval.y", first, rows, sample), y, RTOL, ATOL, where + " eval y");
                }
            }
            return mine;
        });
        if (!affine) {
            return;
        }
        for (int step = 0; step < steps; step++) {
            float[] weight = new float[channels];
            float[] bias = new float[channels];
            for (Grads g : grads) {
                for (int c = 0; c < channels; c++) {
                    weight[c] += g.weight().get(step)[c];
                    bias[c] += g.bias().get(step)[c];
                }
            }
            String key = name + "." + step;
            assertClose(G.floats(key + ".grad_weight"), weight, RTOL, ATOL, key + " grad_weight summed over ranks");
            assertClose(G.floats(key + ".grad_bias"), bias, RTOL, ATOL, key + " grad_bias summed over ranks");
        }
    }

    /** Rows [first, first + rows) of golden tensor key, whose samples have shape sample. */
    static Tensor slice(String key, long first, long rows, long[] sample) {
        long per = Arrays.stream(sample).reduce(1, (a, b) -> a * b);
        long[] shape = new long[sample.length + 1];
        shape[0] = rows;
        System.arraycopy(sample, 0, shape, 1, sample.length);
        return Tensor.ofRegion(G.floats(key), (int) (first * per), shape);
    }
}
