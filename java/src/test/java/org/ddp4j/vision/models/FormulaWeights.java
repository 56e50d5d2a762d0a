package org.ddp4j.vision.models;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.ddp4j.tensor.Tensor;

/**
 * The deterministic weights and input of scripts/golden/resnet_golden.py, bit for bit: no weights
 * are committed, both sides compute them from a 32-bit hash of (flat index, state_dict position)
 * with integer arithmetic and IEEE double operations only (see the script's docstring).
 */
final class FormulaWeights {
    /** The tensor position the script uses for the input images. */
    static final int INPUT_TENSOR = 1000;

    private FormulaWeights() {}

    /** One state_dict entry as the golden file lists it: name, shape, "float32" or "int64". */
    record Key(String name, long[] shape, String dtype) {}

    /** u(i, t) in [-1, 1): the lowbias32 hash of i · 0x9E3779B1 + (t + 1) · 0x85EBCA77, as (h >>> 8) / 2^23 - 1. */
    static double uniform(int i, int t) {
        int h = i * 0x9E3779B1 + (t + 1) * 0x85EBCA77;
        h ^= h >>> 16;
        h *= 0x7FEB352D;
        h ^= h >>> 15;
        h *= 0x846CA68B;
        h ^= h >>> 16;
        return (h >>> 8) / 8388608.0 - 1.0;
    }

    /** float32(offset + scale · u(i, t)) for every flat index of shape. */
    static Tensor formula(long[] shape, int t, double offset, double scale) {
        long n = 1;
        for (long s : shape) {
            n *= s;
        }
        float[] values = new float[Math.toIntExact(n)];
        for (int i = 0; i < values.length; i++) {
            values[i] = (float) (offset + scale * uniform(i, t));
        }
        return Tensor.of(values, shape);
    }

    /** The script's (offset, scale) for an entry; lastBn is the residual branch's last batch norm (bn2 or bn3). */
    static double[] rule(String name, long[] shape, String lastBn) {
        if (shape.length == 4) {
            return new double[] {0, Math.sqrt(6.0 / (shape[1] * shape[2] * shape[3]))};
        }
        if (name.equals("fc.weight")) {
            return new double[] {0, Math.sqrt(3.0 / shape[1])};
        }
        if (name.endsWith("running_var")) {
            return new double[] {1, 0.5};
        }
        if (name.endsWith("running_mean") || name.endsWith("bias")) {
            return new double[] {0, 0.1};
        }
        if (name.startsWith("layer") && name.endsWith("." + lastBn + ".weight")) {
            return new double[] {0.2, 0.05};
        }
        if (name.endsWith("weight")) {
            return new double[] {1, 0.25};
        }
        throw new IllegalArgumentException("no formula for " + name);
    }

    /** The state dict the script loads into torchvision's model: new CPU tensors (they join the current scope). */
    static Map<String, Tensor> state(List<Key> keys) {
        String lastBn = keys.stream().anyMatch(k -> k.name().contains(".bn3.")) ? "bn3" : "bn2";
        Map<String, Tensor> out = new LinkedHashMap<>();
        for (int t = 0; t < keys.size(); t++) {
            Key k = keys.get(t);
            if (k.dtype().equals("int64")) {
                out.put(k.name(), Tensor.ofLongs(new long[] {t}, k.shape()));
            } else {
                double[] r = rule(k.name(), k.shape(), lastBn);
                out.put(k.name(), formula(k.shape(), t, r[0], r[1]));
            }
        }
        return out;
    }

    /** The script's input images [N, C, S, S]. */
    static Tensor input(long... shape) {
        return formula(shape, INPUT_TENSOR, 0, 1);
    }
}
