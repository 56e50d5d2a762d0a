package org.ddp4j.examples;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;
import org.ddp4j.nn.CrossEntropyLoss;
import org.ddp4j.nn.Linear;
import org.ddp4j.nn.Loss;
import org.ddp4j.nn.MSELoss;
import org.ddp4j.nn.Module;
import org.ddp4j.nn.ReLU;
import org.ddp4j.nn.Sequential;
import org.ddp4j.optim.Adam;
import org.ddp4j.optim.Optimizer;
import org.ddp4j.optim.SGD;
import org.ddp4j.tensor.Generator;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;
import org.ddp4j.tensor.Threads;
import org.ddp4j.vision.models.ResNet;
import org.junit.jupiter.api.Test;

/**
 * Training gives the same bits at 1, 2 and 3 intra-op threads (Threads.setNumThreads): each
 * kernel computes every output element in one thread in a fixed order and sums over fixed
 * blocks, so neither the losses nor a single parameter or buffer bit may change. Batches are
 * large enough that GEMMs, batch norm, element-wise ops and the Adam update are really split.
 */
class TrainingThreadCountTest {

    /** What a run leaves: the loss of each step and every state-dict tensor's values. */
    record Outcome(List<Float> losses, Map<String, float[]> state) {}

    private static Outcome train(int threads, Supplier<Module> model, Loss loss, Tensor input, Tensor target,
            java.util.function.Function<List<Tensor>, Optimizer> optimizer) {
        int before = Threads.getNumThreads();
        Threads.setNumThreads(threads);
        try (Module m = model.get(); Optimizer opt = optimizer.apply(m.parameters())) {
            List<Float> losses = new ArrayList<>();
            for (int step = 0; step < 3; step++) {
                try (var scope = Tensors.scope()) {
                    Tensor l = loss.forward(m.forward(input), target);
                    opt.zeroGrad();
                    l.backward();
                    opt.step();
                    losses.add(l.item());
                }
            }
            Map<String, float[]> state = new LinkedHashMap<>();
            m.stateDict().forEach((name, t) -> {
                if (!name.endsWith("num_batches_tracked")) {
                    state.put(name, t.toFloatArray());
                }
            });
            return new Outcome(losses, state);
        } finally {
            Threads.setNumThreads(before);
        }
    }

    private static void assertSameBits(Outcome serial, Outcome other, int threads) {
        assertEquals(serial.losses(), other.losses(), "losses at " + threads + " threads");
        assertEquals(serial.state().keySet(), other.state().keySet());
        serial.state().forEach((name, values) ->
                assertArrayEquals(values, other.state().get(name), name + " at " + threads + " threads"));
    }

    private static Tensor normal(Generator g, long... shape) {
        int n = 1;
        for (long s : shape) {
            n *= (int) s;
        }
        return Tensor.of(g.normal(n), shape);
    }

    @Test
    void convNetWithSgdMomentumTrainsToTheSameBits() {
        Generator g = new Generator(7);
        int batch = 128;
        Tensor images = normal(g, batch, 1, 28, 28);
        long[] labels = new long[batch];
        int[] perm = g.permutation(batch);
        for (int i = 0; i < batch; i++) {
            labels[i] = perm[i] % 10;
        }
        Tensor target = Tensor.ofLongs(labels, batch);
        CrossEntropyLoss ce = new CrossEntropyLoss();
        Outcome serial = train(1, () -> new ConvNet(10, new Generator(0)), ce, images, target,
                p -> new SGD(p, 0.01, 0.9, 0, 0, false));
        for (int threads = 2; threads <= 3; threads++) {
            assertSameBits(serial, train(threads, () -> new ConvNet(10, new Generator(0)), ce, images, target,
                    p -> new SGD(p, 0.01, 0.9, 0, 0, false)), threads);
        }
        images.close();
        target.close();
    }

    /** ResNet-18 (CIFAR stem) runs the fused batch norm + residual + ReLU passes of its blocks. */
    @Test
    void resNet18WithFusedBatchNormReluTrainsToTheSameBits() {
        Generator g = new Generator(9);
        int batch = 4;
        Tensor images = normal(g, batch, 3, 32, 32);
        Tensor target = Tensor.ofLongs(new long[] {3, 1, 4, 1}, batch);
        Supplier<Module> resnet = () -> ResNet.resnet18(
                ResNet.Options.defaults().numClasses(10).cifarStem(true).generator(new Generator(2)));
        CrossEntropyLoss ce = new CrossEntropyLoss();
        Outcome serial = train(1, resnet, ce, images, target, p -> new SGD(p, 0.01, 0.9, 0, 0, false));
        for (int threads = 2; threads <= 3; threads++) {
            assertSameBits(serial, train(threads, resnet, ce, images, target, p -> new SGD(p, 0.01, 0.9, 0, 0, false)),
                    threads);
        }
        images.close();
        target.close();
    }

    @Test
    void mlpWithAdamAndMseTrainsToTheSameBits() {
        Generator g = new Generator(8);
        Tensor input = normal(g, 300, 200);
        Tensor target = normal(g, 300, 50);
        Supplier<Module> mlp = () -> {
            Generator init = new Generator(1);
            return new Sequential(new Linear(200, 300, true, init), new ReLU(), new Linear(300, 50, true, init));
        };
        MSELoss mse = new MSELoss();
        Outcome serial = train(1, mlp, mse, input, target, p -> new Adam(p, 1e-3));
        for (int threads = 2; threads <= 3; threads++) {
            assertSameBits(serial, train(threads, mlp, mse, input, target, p -> new Adam(p, 1e-3)), threads);
        }
        input.close();
        target.close();
    }
}
