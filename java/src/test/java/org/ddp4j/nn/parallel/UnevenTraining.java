package org.ddp4j.nn.parallel;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.ddp4j.nn.Linear;
import org.ddp4j.nn.MSELoss;
import org.ddp4j.nn.Module;
import org.ddp4j.optim.SGD;
import org.ddp4j.tensor.Generator;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;

/**
 * What the join and unused-parameter tests train, shared by the rank processes ({@link JoinMain})
 * and the single-process reference: a model with a trunk and four heads, where which heads a step
 * uses depends on the rank and the step, and each rank's deterministic batches.
 */
final class UnevenTraining {
    private UnevenTraining() {}

    static final double LR = 0.1;
    static final double MOMENTUM = 0.9;
    static final double WEIGHT_DECAY = 0.01;

    /**
     * trunk (4→3), then the sum of: head "a" always; "b" never (unused on every rank); "c" only on
     * rank 1; "d" on even steps only. {@link #use} sets which heads the next forward takes.
     */
    static final class Heads extends Module {
        final Linear trunk;
        final Linear a;
        final Linear b;
        final Linear c;
        final Linear d;
        boolean useC = true;
        boolean useD = true;

        Heads() {
            Generator g = new Generator(7);
            trunk = registerModule("trunk", new Linear(4, 3, true, g));
            a = registerModule("a", new Linear(3, 2, true, g));
            b = registerModule("b", new Linear(3, 2, true, g));
            c = registerModule("c", new Linear(3, 2, true, g));
            d = registerModule("d", new Linear(3, 2, true, g));
        }

        /** Sets the heads rank {@code rank} uses at {@code step}: with the pattern c and d as above, else both. */
        void use(int rank, int step, boolean unusedPattern) {
            useC = !unusedPattern || rank == 1;
            useD = !unusedPattern || step % 2 == 0;
        }

        @Override
        public Tensor forward(Tensor input) {
            Tensor h = trunk.forward(input);
            Tensor out = a.forward(h);
            if (useC) {
                out = out.add(c.forward(h));
            }
            if (useD) {
                out = out.add(d.forward(h));
            }
            return out;
        }
    }

    static Tensor input(int rank, int step) {
        return Tensor.of(new Generator(1000 + 100L * rank + step).normal(8), 2, 4);
    }

    static Tensor target(int rank, int step) {
        return Tensor.of(new Generator(5000 + 100L * rank + step).normal(4), 2, 2);
    }

    static SGD optimizer(List<Tensor> params) {
        return new SGD(params, LR, MOMENTUM, 0, WEIGHT_DECAY, false);
    }

    /**
     * The single-process reference: at each step, every rank that still has a batch contributes
     * its gradient, a parameter used by none gets no gradient (SGD skips it), the others get the
     * sum divided by {@code batches.length} (PyTorch's divide_by_initial_world_size). Returns the
     * final parameters by name.
     */
    static Map<String, float[]> reference(int[] batches, boolean unusedPattern) {
        int world = batches.length;
        int steps = 0;
        for (int n : batches) {
            steps = Math.max(steps, n);
        }
        Heads model = new Heads();
        List<Tensor> params = model.parameters();
        SGD opt = optimizer(params);
        MSELoss loss = new MSELoss();
        for (int step = 0; step < steps; step++) {
            float[][] sums = new float[params.size()][];
            for (int rank = 0; rank < world; rank++) {
                if (step >= batches[rank]) {
                    continue;
                }
                for (Tensor p : params) {
                    if (p.grad() != null) {
                        p.grad().close();
                    }
                    p.setGrad(null);
                }
                model.use(rank, step, unusedPattern);
                try (var scope = Tensors.scope()) {
                    loss.forward(model.forward(input(rank, step)), target(rank, step)).backward();
                }
                for (int i = 0; i < params.size(); i++) {
                    Tensor g = params.get(i).grad();
                    if (g == null) {
                        continue;
                    }
                    float[] v = g.toFloatArray();
                    if (sums[i] == null) {
                        sums[i] = v;
                    } else {
                        for (int k = 0; k < v.length; k++) {
                            sums[i][k] += v[k];
                        }
                    }
                }
            }
            for (int i = 0; i < params.size(); i++) {
                Tensor p = params.get(i);
                if (p.grad() != null) {
                    p.grad().close();
                }
                if (sums[i] == null) {
                    p.setGrad(null);
                } else {
                    float inv = 1f / world;
                    for (int k = 0; k < sums[i].length; k++) {
                        sums[i][k] *= inv;
                    }
                    p.setGrad(Tensor.of(sums[i], p.shape()).keep());
                }
            }
            opt.step();
        }
        Map<String, float[]> out = new java.util.TreeMap<>();
        model.namedParameters().forEach((name, p) -> out.put(name, p.toFloatArray()));
        return out;
    }

    /** "name=v0,v1,..." with floats in Java's shortest round-trip form. */
    static String format(String name, float[] values) {
        List<String> s = new ArrayList<>();
        for (float v : values) {
            s.add(Float.toString(v));
        }
        return name + "=" + String.join(",", s);
    }
}
