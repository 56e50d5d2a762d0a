package org.ddp4j.testing;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.ddp4j.distributed.fsdp.FSDPModule;
import org.ddp4j.nn.Module;
import org.ddp4j.tensor.Tensor;

/** A module's parameter values in one array, for comparing two models bit for bit. */
public final class ParameterValues {
    private ParameterValues() {}

    /** Every parameter's values, in {@code parameters()} order, one after the other. */
    public static float[] of(Module module) {
        List<float[]> parts = new ArrayList<>();
        for (Tensor p : module.parameters()) {
            parts.add(p.toFloatArray());
        }
        return concat(parts);
    }

    /**
     * A fully_shard model's whole parameters (gathered: every rank calls it), in the order of the
     * sharded module's {@code parameters()}: what {@link #of} gives for the same model unsharded.
     */
    public static float[] gathered(FSDPModule fsdp) {
        Map<String, Tensor> full = fsdp.fullStateDict();
        List<float[]> parts = new ArrayList<>();
        fsdp.namedParameters().keySet().forEach(name -> parts.add(full.get(name).toFloatArray()));
        full.values().forEach(Tensor::close);
        return concat(parts);
    }

    private static float[] concat(List<float[]> parts) {
        int total = 0;
        for (float[] v : parts) {
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
