package org.ddp4j.scratch;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.BiFunction;
import org.ddp4j.nn.Module;
import org.ddp4j.tensor.Generator;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;

/** A tiny module: named parameters of given shapes (deterministic values) and a forward lambda. */
public class Toy extends Module {
    final BiFunction<Toy, Tensor, Tensor> fwd;

    public Toy(Map<String, long[]> shapes, long seed, BiFunction<Toy, Tensor, Tensor> fwd) {
        this.fwd = fwd;
        Generator g = new Generator(seed);
        for (Map.Entry<String, long[]> e : shapes.entrySet()) {
            long n = 1;
            for (long d : e.getValue()) n *= d;
            registerParameter(e.getKey(), Tensor.of(g.uniform((int) n, -1f, 1f), e.getValue()).keep());
        }
    }

    public Tensor p(String name) {
        return parameter(name);
    }

    public <M extends Module> M child(String name, M m) {
        return registerModule(name, m);
    }

    @Override
    public Tensor forward(Tensor input) {
        return fwd.apply(this, input);
    }

    public static Map<String, long[]> shapes(Object... kv) {
        Map<String, long[]> m = new LinkedHashMap<>();
        for (int i = 0; i < kv.length; i += 2) m.put((String) kv[i], (long[]) kv[i + 1]);
        return m;
    }

    public static Tensor input(int rank, int step, long... shape) {
        Generator g = new Generator(1000L * step + rank + 7);
        long n = 1;
        for (long d : shape) n *= d;
        return Tensor.of(g.uniform((int) n, -1f, 1f), shape);
    }

    /** Mean over ranks of the gradients of a plain copy for each rank's input; returns name -> grad. */
    public static Map<String, float[]> avgGrads(Module plain, int world, java.util.function.IntFunction<Tensor> lossOfRank) {
        Map<String, float[]> sum = new LinkedHashMap<>();
        for (int r = 0; r < world; r++) {
            plain.zeroGrad(true);
            try (var s = Tensors.scope()) {
                lossOfRank.apply(r).backward();
            }
            for (Map.Entry<String, Tensor> e : plain.namedParameters().entrySet()) {
                Tensor g = e.getValue().grad();
                if (g == null) continue;
                float[] v = g.toFloatArray();
                float[] acc = sum.computeIfAbsent(e.getKey(), k -> new float[v.length]);
                for (int i = 0; i < v.length; i++) acc[i] += v[i] / world;
            }
        }
        plain.zeroGrad(true);
        return sum;
    }

    /** plain SGD on a plain module. */
    public static void sgd(Module plain, Map<String, float[]> grads, float lr) {
        for (Map.Entry<String, Tensor> e : plain.namedParameters().entrySet()) {
            float[] g = grads.get(e.getKey());
            if (g == null) continue;
            float[] v = e.getValue().toFloatArray();
            for (int i = 0; i < v.length; i++) v[i] -= lr * g[i];
            try (Tensor t = Tensor.of(v, e.getValue().shape())) {
                e.getValue().copyFrom(t);
            }
        }
    }

    public static Map<String, float[]> values(Map<String, Tensor> state) {
        Map<String, float[]> out = new LinkedHashMap<>();
        state.forEach((k, v) -> out.put(k, v.toFloatArray()));
        return out;
    }

    public static float maxDiff(float[] a, float[] b) {
        if (a.length != b.length) return Float.POSITIVE_INFINITY;
        float m = 0;
        for (int i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]));
        return m;
    }

    public static List<String> compare(Map<String, float[]> expected, Map<String, float[]> actual, float tol) {
        List<String> bad = new java.util.ArrayList<>();
        expected.forEach((k, v) -> {
            float[] a = actual.get(k);
            if (a == null) bad.add(k + " missing");
            else if (maxDiff(v, a) > tol) bad.add(k + " differs by " + maxDiff(v, a) + " exp " + java.util.Arrays.toString(java.util.Arrays.copyOf(v, Math.min(6, v.length))) + " got " + java.util.Arrays.toString(java.util.Arrays.copyOf(a, Math.min(6, a.length))));
        });
        return bad;
    }
}
