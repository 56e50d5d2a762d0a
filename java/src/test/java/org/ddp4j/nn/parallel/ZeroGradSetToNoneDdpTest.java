package org.ddp4j.nn.parallel;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.ddp4j.nn.Linear;
import org.ddp4j.nn.MSELoss;
import org.ddp4j.nn.Module;
import org.ddp4j.nn.functional.Functional;
import org.ddp4j.optim.SGD;
import org.ddp4j.tensor.Generator;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;
import org.ddp4j.testing.Assertions2;
import org.ddp4j.testing.Ranks;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * DDP on 2 ranks with zero_grad(set_to_none=True) between steps gives the same parameters as with
 * zeroing. In one step rank 1 leaves a head unused: its bucket slice still holds the last averaged
 * gradient, which set_to_none does not clear, and the reducer must send zeros for it (as PyTorch's).
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class ZeroGradSetToNoneDdpTest {
    private static final int STEPS = 4;

    /** A trunk and two heads summed; head b can be skipped. */
    static final class TwoHeads extends Module {
        final Linear trunk;
        final Linear a;
        final Linear b;
        boolean useB = true;

        TwoHeads(Generator g) {
            trunk = registerModule("trunk", new Linear(3, 4, true, g));
            a = registerModule("a", new Linear(4, 2, true, g));
            b = registerModule("b", new Linear(4, 2, true, g));
        }

        @Override
        public Tensor forward(Tensor x) {
            Tensor h = Functional.relu(trunk.forward(x));
            return useB ? a.forward(h).add(b.forward(h)) : a.forward(h);
        }
    }

    private static Tensor batch(int rank, int step, int cols) {
        return Tensor.of(new Generator(100 * step + 10 * rank + cols).uniform(2 * cols, -1f, 1f), 2, cols);
    }

    private static List<Map<String, float[]>> train(boolean setToNone) throws Exception {
        return Ranks.withGroups(2, Duration.ofSeconds(30), (rank, group) -> {
            TwoHeads net = new TwoHeads(new Generator(3));
            try (DistributedDataParallel model = new DistributedDataParallel(net, group,
                    DistributedDataParallel.DEFAULT_BUCKET_CAP_BYTES);
                    SGD opt = new SGD(model.parameters(), 0.1, 0.9, 0, 0, false)) {
                for (int step = 0; step < STEPS; step++) {
                    net.useB = !(rank == 1 && step == 2); // after the buckets were rebuilt (first step)
                    try (var scope = Tensors.scope()) {
                        opt.zeroGrad(setToNone);
                        new MSELoss().forward(model.forward(batch(rank, step, 3)), batch(rank, step, 2)).backward();
                        opt.step();
                    }
                }
                Map<String, float[]> out = new LinkedHashMap<>();
                model.namedParameters().forEach((name, t) -> out.put(name, t.toFloatArray()));
                return out;
            }
        });
    }

    @Test
    void setToNoneMatchesZeroing() throws Exception {
        List<Map<String, float[]>> zeroed = train(false);
        List<Map<String, float[]>> dropped = train(true);
        for (int rank = 0; rank < 2; rank++) {
            Map<String, float[]> expected = zeroed.get(rank);
            assertEquals(expected.keySet(), dropped.get(rank).keySet());
            for (String name : expected.keySet()) {
                // Same collectives on the same values: bit-identical.
                Assertions2.assertClose(expected.get(name), dropped.get(rank).get(name), 0, 0, "rank " + rank + " " + name);
            }
        }
    }
}
