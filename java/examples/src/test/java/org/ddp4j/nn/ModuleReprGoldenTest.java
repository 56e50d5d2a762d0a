package org.ddp4j.nn;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.ddp4j.examples.ConvNet;
import org.ddp4j.tensor.Generator;
import org.ddp4j.testing.Golden;
import org.junit.jupiter.api.Test;

/** Module.toString() against the strings PyTorch's print(model) gives (golden/module_repr.json). */
class ModuleReprGoldenTest {
    private final Golden golden = Golden.load("module_repr");

    @Test
    void convNetPrintsAsPyTorch() {
        try (ConvNet net = new ConvNet(10, new Generator(0))) {
            assertEquals(golden.text("convnet"), net.toString());
        }
    }

    @Test
    void convNetWithDropoutPrintsAsPyTorch() {
        try (ConvNet net = new ConvNet(10, 0.5, new Generator(0))) {
            assertEquals(golden.text("convnet_dropout"), net.toString());
        }
    }

    @Test
    void everyLayerPrintsAsPyTorch() {
        Generator g = new Generator(0);
        try (Sequential mixed = new Sequential(new Conv2d(3, 8, 3, Conv2d.Options.defaults().stride(2).padding(1).bias(false)
                .generator(g)), new BatchNorm2d(8, 1e-3, 0.2), new ReLU(), new MaxPool2d(3, 2, 1), new Flatten(),
                new Dropout(0.25), new Linear(8, 2, false, g), new Sequential())) {
            assertEquals(golden.text("mixed"), mixed.toString());
        }
    }

    @Test
    void floatsAreWrittenAsPythonsRepr() {
        assertEquals("1e-05", ReprFormat.pythonFloat(1e-5));
        assertEquals("0.0001", ReprFormat.pythonFloat(1e-4));
        assertEquals("0.1", ReprFormat.pythonFloat(0.1));
        assertEquals("2.0", ReprFormat.pythonFloat(2));
        assertEquals("-1.5e-07", ReprFormat.pythonFloat(-1.5e-7));
        assertEquals("1e+16", ReprFormat.pythonFloat(1e16));
        assertEquals("123456.789", ReprFormat.pythonFloat(123456.789));
    }
}
