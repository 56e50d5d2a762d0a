package org.ddp4j.nn.parallel;

import java.util.LinkedHashMap;
import java.util.Map;
import org.ddp4j.nn.AdaptiveAvgPool2d;
import org.ddp4j.nn.BatchNorm2d;
import org.ddp4j.nn.Conv2d;
import org.ddp4j.nn.CrossEntropyLoss;
import org.ddp4j.nn.Linear;
import org.ddp4j.nn.Module;
import org.ddp4j.nn.ReLU;
import org.ddp4j.nn.Sequential;
import org.ddp4j.optim.SGD;
import org.ddp4j.tensor.DType;
import org.ddp4j.tensor.Generator;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;
import org.ddp4j.vision.models.BasicBlock;

/**
 * The training both sides of {@link SyncBatchNormDdpTest} run: a small ResNet (a conv, batch norm,
 * ReLU stem as a Sequential, which fuses batch norm and ReLU; one ResNet-18 BasicBlock with a
 * downsample branch, whose batch norms are held in fields; pooling and a linear head), 3 SGD
 * momentum steps with cross-entropy, on fixed batches of {@link #BATCH} images.
 */
final class SyncBatchNormTraining {
    static final int BATCH = 8;
    static final int STEPS = 3;

    private SyncBatchNormTraining() {}

    /** The model with plain BatchNorm2d layers, the same weights on every call. */
    static Module model() {
        Generator g = new Generator(2026);
        return new SmallResNet(g);
    }

    /** Trains on rows [first, first + rows) of each step's batch; returns the model's state. */
    static Map<String, float[]> train(Module model, Module state, int first, int rows) {
        SGD sgd = new SGD(model.parameters(), 0.1, 0.9, 0, 0, false);
        CrossEntropyLoss loss = new CrossEntropyLoss();
        Generator data = new Generator(7);
        for (int step = 0; step < STEPS; step++) {
            float[] images = data.normal(BATCH * 3 * 8 * 8);
            long[] labels = new long[BATCH];
            for (int i = 0; i < BATCH; i++) {
                labels[i] = (i * 3 + step) % 5;
            }
            long[] mine = java.util.Arrays.copyOfRange(labels, first, first + rows);
            try (var scope = Tensors.scope()) {
                Tensor x = Tensor.ofRegion(images, first * 3 * 8 * 8, rows, 3, 8, 8);
                Tensor y = Tensor.ofLongs(mine, rows);
                sgd.zeroGrad();
                loss.forward(model.forward(x), y).backward();
                sgd.step();
            }
        }
        Map<String, float[]> out = new LinkedHashMap<>();
        state.stateDict().forEach((name, t) -> out.put(name, t.dtype() == DType.INT64
                ? new float[] {t.toLongArray()[0]} : t.toFloatArray()));
        return out;
    }

    /** Stem, one BasicBlock with downsample, global pooling, linear head; input [N, 3, 8, 8], 5 classes. */
    static final class SmallResNet extends Module {
        private final Module stem;
        private final Module block;
        private final Module pool;
        private final Linear fc;

        SmallResNet(Generator g) {
            stem = registerModule("stem", new Sequential(new Conv2d(3, 8, 3, 1, 1, false, g), new BatchNorm2d(8),
                    new ReLU()));
            Module downsample = new Sequential(new Conv2d(8, 16, 1, 2, 0, false, g), new BatchNorm2d(16));
            block = registerModule("block", new BasicBlock(8, 16, 2, downsample, g));
            pool = registerModule("pool", new AdaptiveAvgPool2d(1));
            fc = registerModule("fc", new Linear(16, 5, true, g));
        }

        @Override
        public Tensor forward(Tensor x) {
            Tensor out = pool.forward(block.forward(stem.forward(x)));
            return fc.forward(out.reshape(out.size(0), -1));
        }
    }
}
