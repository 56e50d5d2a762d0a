package org.ddp4j.vision.models;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.ddp4j.tensor.Generator;
import org.ddp4j.testing.Golden;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Each ResNet's state_dict and parameters() against torchvision 0.14's
 * (scripts/golden/resnet_golden.py, resnet_structure.json): the same names, in the same order,
 * with the same shapes and dtypes, and the same parameter count. A state dict saved from
 * torchvision therefore loads strictly, and DDP buckets and checksums over parameters() see the
 * tensors in PyTorch's order.
 */
class ResNetStructureTest {

    @ParameterizedTest
    @CsvSource({"resnet18, 11689512", "resnet34, 21797672", "resnet50, 25557032", "resnet101, 44549160",
            "resnet152, 60192808", "resnet18_cifar_1ch_10, 11172810"})
    void namesOrderShapesAndCountAreTorchvisions(String name, long torchvisionCount) {
        Golden g = Golden.load("resnet_structure");
        ResNet.Options options = ResNet.Options.defaults().generator(new Generator(0));
        try (ResNet model = name.equals("resnet18_cifar_1ch_10")
                ? ResNet.resnet18(options.numClasses(10).cifarStem(true).inChannels(1))
                : ResNet.of(name, options)) {
            List<String> actual = new ArrayList<>();
            model.stateDict().forEach((key, t) -> actual.add(key + " " + Arrays.toString(t.shape()) + " "
                    + t.dtype().name().toLowerCase()));
            List<String> expected = new ArrayList<>();
            for (FormulaWeights.Key k : ResNetGoldenTest.keys(g, name + ".state_dict")) {
                expected.add(k.name() + " " + Arrays.toString(k.shape()) + " " + k.dtype());
            }
            assertEquals(String.join("\n", expected), String.join("\n", actual), name + " state_dict");

            assertEquals(g.json(name + ".parameters"), List.copyOf(model.namedParameters().keySet()), name + " parameters()");
            long count = model.parameters().stream().mapToLong(t -> t.numel()).sum();
            assertEquals((long) g.number(name + ".param_count"), count, name + " parameter count");
            assertEquals(torchvisionCount, count, name + " parameter count");
        }
    }
}
