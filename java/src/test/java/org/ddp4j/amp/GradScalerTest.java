package org.ddp4j.amp;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.ddp4j.nn.Linear;
import org.ddp4j.optim.SGD;
import org.ddp4j.tensor.Generator;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;
import org.ddp4j.testing.Golden;
import org.junit.jupiter.api.Test;

/**
 * GradScaler against the scale sequence of scripts/golden/grad_scaler_golden.py (PyTorch's
 * _amp_update_scale_ rule) for a fixed pattern of steps with an inf or NaN gradient; skipped steps
 * leave the parameters bit for bit unchanged, taken steps equal an unscaled float32 run (scaling
 * by a power of two and back is exact, so equal bits); state dict with PyTorch's keys.
 */
class GradScalerTest {
    private static float[][] params(Linear m) {
        return m.parameters().stream().map(Tensor::toFloatArray).toArray(float[][]::new);
    }

    @Test
    void scaleSequenceAndSkippedStepsMatchPyTorch() {
        Golden g = Golden.load("grad_scaler");
        @SuppressWarnings("unchecked")
        List<Integer> pattern = (List<Integer>) g.json("pattern");
        @SuppressWarnings("unchecked")
        List<Double> scales = (List<Double>) g.json("scales");
        @SuppressWarnings("unchecked")
        List<Integer> trackers = (List<Integer>) g.json("growth_trackers");
        try (Linear model = new Linear(3, 2, true, new Generator(1));
                Linear reference = new Linear(3, 2, true, new Generator(1))) {
            SGD opt = new SGD(model.parameters(), 0.1);
            SGD refOpt = new SGD(reference.parameters(), 0.1);
            GradScaler scaler = new GradScaler(g.number("init_scale"), g.number("growth_factor"),
                    g.number("backoff_factor"), (int) g.number("growth_interval"), true);
            Tensor x = Tensor.of(new float[] {1f, -2f, 0.5f, 0.25f, 3f, -1f}, 2, 3);
            for (int step = 0; step < pattern.size(); step++) {
                try (var scope = Tensors.scope()) {
                    opt.zeroGrad();
                    scaler.scale(model.forward(x).sum()).backward();
                    boolean inf = pattern.get(step) == 1;
                    if (inf) {  // one bad element in one gradient (alternately inf and NaN)
                        Tensor w = model.parameters().get(step % 2);
                        float[] gv = w.grad().toFloatArray();
                        gv[gv.length - 1] = step % 4 == 1 ? Float.NaN : Float.POSITIVE_INFINITY;
                        w.grad().copyFrom(Tensor.of(gv, w.grad().shape()));
                    }
                    float[][] before = params(model);
                    boolean stepped = scaler.step(opt);
                    assertEquals(!inf, stepped, "step " + step);
                    if (inf) {
                        assertArrayEquals(before, params(model), "a skipped step leaves the parameters as they were");
                    } else {
                        refOpt.zeroGrad();
                        reference.forward(x).sum().backward();
                        refOpt.step();
                        assertArrayEquals(params(reference), params(model), "step " + step + " equals the unscaled run");
                    }
                    scaler.update();
                    assertEquals(scales.get(step), scaler.getScale(), 0.0, "scale after step " + step);
                    assertEquals(trackers.get(step), scaler.getGrowthTracker(), "growth tracker after step " + step);
                }
            }
        }
    }

    @Test
    void stateDictHasPyTorchsKeysAndRoundTrips() {
        GradScaler a = new GradScaler(1024, 4, 0.25, 7, true);
        Map<String, Object> sd = a.stateDict();
        assertEquals(List.of("scale", "growth_factor", "backoff_factor", "growth_interval", "_growth_tracker"),
                new ArrayList<>(sd.keySet()));
        assertEquals(1024.0, sd.get("scale"));
        GradScaler b = new GradScaler();
        b.loadStateDict(sd);
        assertEquals(sd, b.stateDict());
        assertTrue(new GradScaler(new GradScaler.Options().enabled(false)).stateDict().isEmpty());
        IllegalArgumentException empty = assertThrows(IllegalArgumentException.class, () -> b.loadStateDict(Map.of()));
        assertTrue(empty.getMessage().contains("disabled GradScaler"), empty.getMessage());
    }

    @Test
    void misuseIsRefusedWithTheFix() {
        assertThrows(IllegalArgumentException.class, () -> new GradScaler(1, 1.0, 0.5, 10, true));
        assertThrows(IllegalArgumentException.class, () -> new GradScaler(1, 2.0, 1.5, 10, true));
        assertThrows(IllegalArgumentException.class, () -> new GradScaler(1, 2.0, 0.5, 0, true));
        GradScaler s = new GradScaler();
        IllegalStateException noCheck = assertThrows(IllegalStateException.class, s::update);
        assertTrue(noCheck.getMessage().contains("call step(optimizer)"), noCheck.getMessage());
        try (Linear model = new Linear(2, 1, true, new Generator(2)); var scope = Tensors.scope()) {
            SGD opt = new SGD(model.parameters(), 0.1);
            s.scale(model.forward(Tensor.of(new float[] {1f, 2f}, 1, 2)).sum()).backward();
            s.unscale(opt);
            assertThrows(IllegalStateException.class, () -> s.unscale(opt));
            assertTrue(s.step(opt));
            assertThrows(IllegalStateException.class, () -> s.step(opt));
            s.update();
            assertEquals(65536.0, s.getScale());
        }
        // No backward before step: nothing to check, as PyTorch's "No inf checks were recorded".
        try (Linear model = new Linear(2, 1, true, new Generator(2))) {
            GradScaler fresh = new GradScaler();
            SGD opt = new SGD(model.parameters(), 0.1);
            IllegalStateException noBackward = assertThrows(IllegalStateException.class, () -> fresh.step(opt));
            assertTrue(noBackward.getMessage().contains("backward()"), noBackward.getMessage());
        }
        GradScaler off = new GradScaler(new GradScaler.Options().enabled(false));
        assertEquals(1.0, off.getScale());
        assertFalse(off.isEnabled());
    }
}
