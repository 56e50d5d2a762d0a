package org.ddp4j.vision.models;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import org.ddp4j.nn.CrossEntropyLoss;
import org.ddp4j.serialization.SafeTensors;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;
import org.ddp4j.testing.Assertions2;
import org.ddp4j.testing.Golden;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * ResNets against torchvision 0.14 (scripts/golden/resnet_golden.py): with the same weights
 * (FormulaWeights, loaded strictly under torchvision's names), the same logits, loss and parameter
 * gradients of the cross-entropy in eval mode and in train mode (batch statistics), and the same
 * running statistics after the train forward. Outputs agree to 1e-4 relative; gradients to 1e-4 or to twice
 * the spread float32 itself shows there, whichever is larger (see check).
 */
class ResNetGoldenTest {
    private static final double RTOL = 1e-4;

    /** The Java model for a golden file: 10 classes; resnet18_cifar is the CIFAR stem on 1 channel. */
    static ResNet model(String golden) {
        ResNet.Options ten = ResNet.Options.defaults().numClasses(10);
        return switch (golden) {
            case "resnet18" -> ResNet.resnet18(ten);
            case "resnet50" -> ResNet.resnet50(ten);
            case "resnet18_cifar" -> ResNet.resnet18(ten.cifarStem(true).inChannels(1));
            default -> throw new IllegalArgumentException(golden);
        };
    }

    /** The golden file's state_dict list: [name, shape, dtype] per entry, in torchvision's order. */
    @SuppressWarnings("unchecked")
    static List<FormulaWeights.Key> keys(Golden g, String entry) {
        List<FormulaWeights.Key> out = new ArrayList<>();
        for (Object o : (List<Object>) g.json(entry)) {
            List<Object> k = (List<Object>) o;
            long[] shape = ((List<Object>) k.get(1)).stream().mapToLong(v -> ((Number) v).longValue()).toArray();
            out.add(new FormulaWeights.Key((String) k.get(0), shape, (String) k.get(2)));
        }
        return out;
    }

    @ParameterizedTest
    @ValueSource(strings = {"resnet18", "resnet50", "resnet18_cifar"})
    void evalAndTrainForwardAndBackwardMatchTorchvision(String name) {
        Golden g = Golden.load(name);
        try (ResNet model = model(name); var scope = Tensors.scope()) {
            model.loadStateDict(FormulaWeights.state(keys(g, "state_dict")), true);
            Tensor input = FormulaWeights.input(inputShape(g));
            // The formula is reproduced bit for bit, so the comparisons below are of the model alone.
            float[] head = g.floats("input_head");
            assertArrayEquals(head, Arrays.copyOf(input.toFloatArray(), head.length), name + " input");
            Tensor target = g.tensor("target");

            model.eval();
            check(g, "eval", model, input, target);
            model.zeroGrad();
            model.train();
            check(g, "train", model, input, target);

            Map<String, Tensor> state = model.stateDict();
            for (String buffer : List.of("bn1.running_mean", "bn1.running_var", "layer2.0.downsample.1.running_mean",
                    "layer2.0.downsample.1.running_var")) {
                Assertions2.assertClose(g.tensor("after_train." + buffer), state.get(buffer), RTOL, 1e-6,
                        name + " " + buffer + " after the train forward");
            }
            assertEquals(g.longs("after_train.bn1.num_batches_tracked")[0],
                    state.get("bn1.num_batches_tracked").toLongArray()[0], name + " num_batches_tracked");
        }
    }

    /** Logits, loss and every parameter gradient of one forward and backward against the golden "mode" entries. */
    private static void check(Golden g, String mode, ResNet model, Tensor input, Tensor target) {
        Tensor logits = model.forward(input);
        float[] expected = g.floats(mode + ".logits");
        Assertions2.assertClose(expected, logits.toFloatArray(), RTOL, RTOL * maxAbs(expected), mode + " logits");
        Tensor loss = new CrossEntropyLoss().forward(logits, target);
        double expectedLoss = g.number(mode + ".loss");
        assertEquals(expectedLoss, loss.item(), RTOL * Math.abs(expectedLoss), mode + " loss");
        loss.backward();
        model.namedParameters().forEach((name, p) -> {
            float[] grad = p.grad().toFloatArray();
            double sum = 0;
            double absSum = 0;
            for (float v : grad) {
                sum += v;
                absSum += Math.abs(v);
            }
            double expectedAbsSum = g.number(mode + ".grad_abs_sum." + name);
            double meanAbs = expectedAbsSum / grad.length;
            // How far float32 runs lie from float64 here ([head, sum, abs sum]; resnet_golden.py's run()): float32
            // rounding flips ReLU inputs near 0, and each flip moves every gradient upstream of it. Twice that,
            // where it exceeds 1e-4 of a value, is what another summation order may give.
            double[] spread = g.doubles(mode + ".grad_spread." + name);
            // Each gradient's size (sum of |g|) to 1e-4 relative; its sum, which cancels, relative to that size;
            // its first values relative to themselves with a floor of 1e-4 of the gradient's mean |g|.
            assertEquals(expectedAbsSum, absSum, Math.max(RTOL * expectedAbsSum, 2 * spread[2]),
                    mode + " sum |grad " + name + "|");
            assertEquals(g.number(mode + ".grad_sum." + name), sum, Math.max(RTOL * expectedAbsSum, 2 * spread[1]),
                    mode + " sum of grad " + name);
            float[] expectedHead = g.floats(mode + ".grad_head." + name);
            float[] head = new float[expectedHead.length];
            System.arraycopy(grad, 0, head, 0, head.length);
            Assertions2.assertClose(expectedHead, head, RTOL, Math.max(RTOL * meanAbs, 2 * spread[0]),
                    mode + " first values of grad " + name);
        });
    }

    @ParameterizedTest
    @ValueSource(strings = {"resnet18_cifar"})
    void weightsWrittenAsSafetensorsLoadStrictlyAndGiveTorchvisionsLogits(String name, @TempDir Path dir) {
        Golden g = Golden.load(name);
        Path file = dir.resolve(name + ".safetensors");
        try (var scope = Tensors.scope()) {
            SafeTensors.saveFile(FormulaWeights.state(keys(g, "state_dict")), file, Map.of("format", "pt"));
        }
        try (ResNet model = model(name); var scope = Tensors.scope()) {
            model.loadTorchvisionWeights(file).eval();
            float[] expected = g.floats("eval.logits");
            Assertions2.assertClose(expected, model.forward(FormulaWeights.input(inputShape(g))).toFloatArray(),
                    RTOL, RTOL * maxAbs(expected), "logits");
        }
        // A ResNet-34 (or any other model) refuses those weights and names the names that differ.
        try (ResNet other = ResNet.resnet34(ResNet.Options.defaults().numClasses(10).cifarStem(true).inChannels(1))) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> other.loadTorchvisionWeights(file));
            assertTrue(e.getMessage().contains("Missing key(s) in state_dict: layer1.2.conv1.weight"), e.getMessage());
        }
    }

    private static long[] inputShape(Golden g) {
        return Arrays.stream(g.doubles("input_shape")).mapToLong(d -> (long) d).toArray();
    }

    private static double maxAbs(float[] values) {
        double m = 0;
        for (float v : values) {
            m = Math.max(m, Math.abs(v));
        }
        return m;
    }

}
