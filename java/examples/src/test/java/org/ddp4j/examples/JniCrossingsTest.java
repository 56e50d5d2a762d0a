package org.ddp4j.examples;

import static org.junit.jupiter.api.Assertions.assertTrue;

import org.ddp4j.internal.JniCalls;
import org.ddp4j.nn.CrossEntropyLoss;
import org.ddp4j.optim.SGD;
import org.ddp4j.tensor.Generator;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;
import org.junit.jupiter.api.Test;

/**
 * Bounds the JNI crossings of one ConvNet training step (forward, cross-entropy, zeroGrad,
 * backward, SGD with momentum, freeing the step's tensors) after warm-up, in one process.
 */
class JniCrossingsTest {
    /**
     * Crossings allowed per step: 96 since ops return each result's metadata with its handle; 135
     * before, when every result cost a second crossing (meta).
     */
    private static final long MAX_CROSSINGS_PER_STEP = 110;

    @Test
    void convNetTrainingStepStaysUnderTheCrossingBound() {
        Generator gen = new Generator(0);
        try (ConvNet model = new ConvNet(10, gen);
                SGD opt = new SGD(model.parameters(), 0.05, 0.9, 0, 0, false);
                Tensor x = Tensor.of(gen.uniform(8 * 28 * 28, 0f, 1f), 8, 1, 28, 28).keep();
                Tensor y = Tensor.ofLongs(new long[] {0, 1, 2, 3, 4, 5, 6, 7}, 8).keep()) {
            CrossEntropyLoss ce = new CrossEntropyLoss();
            long crossings = 0;
            for (int step = 0; step < 3; step++) {
                long before = JniCalls.count();
                try (var scope = Tensors.scope()) {
                    Tensor loss = ce.forward(model.forward(x), y);
                    opt.zeroGrad();
                    loss.backward();
                    opt.step();
                }
                crossings = JniCalls.count() - before;
            }
            System.out.println("JNI crossings per ConvNet training step: " + crossings);
            assertTrue(crossings <= MAX_CROSSINGS_PER_STEP,
                    crossings + " JNI crossings per ConvNet step, over the bound " + MAX_CROSSINGS_PER_STEP);
        }
    }
}
