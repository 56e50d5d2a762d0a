package org.ddp4j.vision.models;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;
import org.ddp4j.nn.Init;
import org.ddp4j.tensor.Generator;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;
import org.junit.jupiter.api.Test;

/**
 * torchvision's initialisation (ResNet.__init__'s loop over modules): convolutions
 * kaiming_normal_(fan_out, relu), batch norm weight 1 and bias 0, fc Linear's default, and
 * zero_init_residual; the statistics are checked with tolerances of several standard errors, so
 * they cannot flake yet would catch fan_in for fan_out (a factor 2 to 9 in the variance) or a
 * uniform for a normal.
 */
class ResNetInitTest {

    /** Sample mean and standard deviation. */
    private static double[] meanStd(Tensor t) {
        float[] v = t.toFloatArray();
        double sum = 0;
        double sq = 0;
        for (float x : v) {
            sum += x;
            sq += (double) x * x;
        }
        double mean = sum / v.length;
        return new double[] {mean, Math.sqrt(sq / v.length - mean * mean)};
    }

    /** std within 3% of sqrt(2 / fan_out) (the standard error of the std is 1/sqrt(2n): 0.7% at n = 9408), mean within 5 standard errors of 0. */
    private static void assertKaimingFanOut(Tensor w, String name) {
        double expected = Math.sqrt(2.0 / Init.fanOut(w));
        double[] ms = meanStd(w);
        assertEquals(expected, ms[1], 0.03 * expected, name + " std (fan_in would give " + Math.sqrt(2.0 / Init.fanIn(w)) + ")");
        assertEquals(0, ms[0], 5 * expected / Math.sqrt(w.numel()), name + " mean");
        // A normal's kurtosis is 3, a uniform's 1.8: the fourth moment tells them apart.
        float[] v = w.toFloatArray();
        double m4 = 0;
        for (float x : v) {
            m4 += Math.pow(x - ms[0], 4);
        }
        assertEquals(3, m4 / v.length / Math.pow(ms[1], 4), 0.3, name + " kurtosis");
    }

    @Test
    void convolutionsAreKaimingNormalFanOutAndBatchNormsOneAndZero() {
        try (ResNet model = ResNet.resnet18(ResNet.Options.defaults().generator(new Generator(3)))) {
            Map<String, Tensor> params = model.namedParameters();
            assertKaimingFanOut(params.get("conv1.weight"), "conv1.weight");
            assertKaimingFanOut(params.get("layer3.1.conv2.weight"), "layer3.1.conv2.weight");
            assertKaimingFanOut(params.get("layer4.0.downsample.0.weight"), "layer4.0.downsample.0.weight");
            model.stateDict().forEach((name, t) -> {
                if (name.contains("bn") || name.contains("downsample.1")) {
                    float expected = name.endsWith("weight") || name.endsWith("running_var") ? 1 : 0;
                    for (float v : name.endsWith("num_batches_tracked") ? new float[] {t.toLongArray()[0]} : t.toFloatArray()) {
                        assertEquals(expected, v, 0, name);
                    }
                }
            });
            // fc keeps Linear's default: uniform in ±1/sqrt(512), std bound/sqrt(3).
            double bound = 1 / Math.sqrt(512);
            for (String name : new String[] {"fc.weight", "fc.bias"}) {
                for (float v : params.get(name).toFloatArray()) {
                    assertTrue(Math.abs(v) <= bound, name + " value " + v + " outside ±" + bound);
                }
            }
            assertEquals(bound / Math.sqrt(3), meanStd(params.get("fc.weight"))[1], 0.02 * bound, "fc.weight std");
        }
    }

    @Test
    void zeroInitResidualZeroesEachBlocksLastBatchNormWeight() {
        try (ResNet basic = ResNet.resnet18(ResNet.Options.defaults().zeroInitResidual(true));
                ResNet bottleneck = ResNet.resnet50(ResNet.Options.defaults().numClasses(10).zeroInitResidual(true))) {
            int zeroed = 0;
            for (var e : basic.namedParameters().entrySet()) {
                if (e.getKey().matches("layer\\d\\.\\d\\.bn\\d\\.weight")) {
                    boolean last = e.getKey().endsWith("bn2.weight");
                    for (float v : e.getValue().toFloatArray()) {
                        assertEquals(last ? 0 : 1, v, 0, e.getKey());
                    }
                    zeroed += last ? 1 : 0;
                }
            }
            assertEquals(8, zeroed, "resnet18 has 8 BasicBlocks");
            zeroed = 0;
            for (var e : bottleneck.namedParameters().entrySet()) {
                if (e.getKey().matches("layer\\d\\.\\d\\.bn\\d\\.weight")) {
                    boolean last = e.getKey().endsWith("bn3.weight");
                    for (float v : e.getValue().toFloatArray()) {
                        assertEquals(last ? 0 : 1, v, 0, e.getKey());
                    }
                    zeroed += last ? 1 : 0;
                }
            }
            assertEquals(16, zeroed, "resnet50 has 16 Bottlenecks");
            // downsample's batch norm is not the residual branch's: it keeps weight 1.
            assertEquals(1, bottleneck.namedParameters().get("layer2.0.downsample.1.weight").toFloatArray()[0], 0);
        }
    }

    @Test
    void theSameGeneratorSeedGivesTheSameModel() {
        try (ResNet a = ResNet.resnet18(ResNet.Options.defaults().numClasses(10).generator(new Generator(7)));
                ResNet b = ResNet.resnet18(ResNet.Options.defaults().numClasses(10).generator(new Generator(7)));
                ResNet c = ResNet.resnet18(ResNet.Options.defaults().numClasses(10).generator(new Generator(8)))) {
            a.namedParameters().forEach((name, t) ->
                    assertArrayEquals(t.toFloatArray(), b.namedParameters().get(name).toFloatArray(), name));
            assertFalse(java.util.Arrays.equals(a.conv1().weight().toFloatArray(), c.conv1().weight().toFloatArray()));
        }
    }

    @Test
    void optionsAndShapesAreCheckedWithMessagesThatSayWhatToChange() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> ResNet.of("resnet19", ResNet.Options.defaults()));
        assertTrue(e.getMessage().contains("resnet18, resnet34, resnet50, resnet101, resnet152"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> ResNet.Options.defaults().numClasses(0));
        assertTrue(e.getMessage().contains("numClasses and inChannels must be positive"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> new ResNet(ResNet.Block.BASIC, new int[] {2, 2, 2}, ResNet.Options.defaults()));
        assertTrue(e.getMessage().contains("4 positive block counts"), e.getMessage());
        try (BasicBlock block = new BasicBlock(64, 128, 2, null, new Generator(0)); var scope = Tensors.scope()) {
            e = assertThrows(IllegalArgumentException.class, () -> block.forward(Tensor.zeros(1, 64, 8, 8)));
            assertTrue(e.getMessage().contains("needs a downsample"), e.getMessage());
        }
        try (ResNet model = ResNet.resnet18(ResNet.Options.defaults().numClasses(10).cifarStem(true).inChannels(1));
                var scope = Tensors.scope()) {
            assertThrows(IllegalArgumentException.class, () -> model.forward(Tensor.zeros(2, 3, 28, 28)), "3 channels into a 1-channel stem");
            assertArrayEquals(new long[] {2, 10}, model.eval().forward(Tensor.zeros(2, 1, 28, 28)).shape());
        }
    }
}
