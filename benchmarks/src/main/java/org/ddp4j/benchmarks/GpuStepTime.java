package org.ddp4j.benchmarks;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import org.ddp4j.cuda.Cuda;
import org.ddp4j.examples.ConvNet;
import org.ddp4j.nn.CrossEntropyLoss;
import org.ddp4j.optim.SGD;
import org.ddp4j.tensor.Device;
import org.ddp4j.tensor.Generator;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;

/**
 * ConvNet training step time on a GPU: the two-conv network of the demo (float32) on synthetic
 * inputs of the demo's shape ([B, 1, 28, 28] normal, labels i % 10), CrossEntropyLoss, SGD lr
 * 0.01 momentum 0.9; forward + zeroGrad + backward + step. Inputs are on the GPU before timing.
 * Each step is timed on its own between two {@link Cuda#synchronize} calls (so the figure is the
 * step's full latency, launches and JNI included), after a warm-up that fills the caching
 * allocator; prints the median and the best. {@code scripts/gpu/torch_convnet_step.py} does the
 * same with PyTorch (TF32 off) and prints the same line, so scripts/gpu-check.sh can set the two
 * side by side.
 *
 * <p>Run: {@code java -cp benchmarks/target/benchmarks.jar org.ddp4j.benchmarks.GpuStepTime
 * [--batch 100,1024] [--warmup 20] [--steps 100] [--device cuda:N]} ({@code --device cpu} times
 * the same on the CPU, for comparison). Prints, per batch size,
 * {@code gpu_step batch=B steps=S median_ms=M best_ms=T images_per_s=I last_loss=L}. Exits 77
 * (printing why) when no GPU can be used.
 */
public final class GpuStepTime {
    private GpuStepTime() {}

    public static void main(String[] args) {
        List<Integer> batches = new ArrayList<>(List.of(100, 1024));
        int warmup = 20;
        int steps = 100;
        String deviceName = null;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--batch" -> {
                    batches.clear();
                    for (String b : args[++i].split(",")) {
                        batches.add(Integer.parseInt(b.trim()));
                    }
                }
                case "--warmup" -> warmup = Integer.parseInt(args[++i]);
                case "--steps" -> steps = Integer.parseInt(args[++i]);
                case "--device" -> deviceName = args[++i];
                default -> {
                    System.err.println("usage: GpuStepTime [--batch 100,1024] [--warmup 20] [--steps 100] [--device cuda:N]");
                    System.exit(2);
                }
            }
        }
        Device device = deviceName != null ? Device.parse(deviceName) : null;
        if (device == null || device.isCuda()) {
            String reason = Cuda.unavailableReason();
            if (reason != null) {
                System.out.println("GpuStepTime: no GPU to time on: " + reason);
                System.exit(77);
            }
            device = device != null ? device : Cuda.localDevice(System.getenv());
        }
        System.out.println("device " + device + (device.isCuda() ? " " + Cuda.deviceName(device) : ""));
        for (int batch : batches) {
            time(device, batch, warmup, steps);
            if (device.isCuda()) {
                Cuda.emptyCache(); // the next batch size needs other block sizes
            } else {
                Tensors.emptyCache();
            }
        }
    }

    private static void time(Device device, int batch, int warmup, int steps) {
        Generator gen = new Generator(0);
        long[] labels = new long[batch];
        for (int i = 0; i < batch; i++) {
            labels[i] = i % 10;
        }
        try (Tensor xCpu = Tensor.of(gen.normal(batch * 28 * 28), batch, 1, 28, 28);
             Tensor yCpu = Tensor.ofLongs(labels, batch);
             Tensor x = xCpu.to(device);
             Tensor y = yCpu.to(device);
             ConvNet model = new ConvNet(10, gen)) {
            model.to(device);
            SGD sgd = new SGD(model.parameters(), 0.01, 0.9, 0, 0, false);
            CrossEntropyLoss criterion = new CrossEntropyLoss();
            long[] t = new long[steps];
            float lastLoss = Float.NaN;
            for (int i = -warmup; i < steps; i++) {
                sync(device);
                long t0 = System.nanoTime();
                try (var scope = Tensors.scope()) {
                    Tensor loss = criterion.forward(model.forward(x), y);
                    sgd.zeroGrad();
                    loss.backward();
                    sgd.step();
                    sync(device);
                    if (i >= 0) {
                        t[i] = System.nanoTime() - t0;
                    }
                    if (i == steps - 1) {
                        lastLoss = loss.item();
                    }
                }
            }
            Arrays.sort(t);
            double median = (steps % 2 == 1 ? t[steps / 2] : (t[steps / 2 - 1] + t[steps / 2]) / 2.0) / 1e6;
            System.out.printf(Locale.ROOT, "gpu_step batch=%d steps=%d median_ms=%.3f best_ms=%.3f images_per_s=%.0f last_loss=%.4f%n",
                    batch, steps, median, t[0] / 1e6, batch / (median / 1e3), lastLoss);
        }
    }

    private static void sync(Device device) {
        if (device.isCuda()) {
            Cuda.synchronize(device);
        }
    }
}
