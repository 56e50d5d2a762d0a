package org.ddp4j.testing;

import java.util.ArrayList;
import java.util.List;
import org.ddp4j.nn.Module;
import org.ddp4j.tensor.Tensor;

/** A module's parameter values in one array, for comparing two models bit for bit. */
public final class ParameterValues {
    private ParameterValues() {}

    /** Every parameter's values, in {@code parameters()} order, one after the other. */
    public static float[] of(Module module) {
        List<float[]> parts = new ArrayList<>();
        int total = 0;
        for (Tensor p : module.parameters()) {
            float[] v = p.toFloatArray();
            parts.add(v);
            total += v.length;
        }
        float[] out = new float[total];
        int at = 0;
        for (float[] v : parts) {
            System.arraycopy(v, 0, out, at, v.length);
            at += v.length;
        }
        return out;
    }
}
