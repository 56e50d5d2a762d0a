package org.ddp4j.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.ddp4j.nn.CrossEntropyLoss;
import org.ddp4j.nn.Module;
import org.ddp4j.optim.SGD;
import org.ddp4j.serialization.SafeTensors;
import org.ddp4j.tensor.Generator;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;
import org.ddp4j.testing.LauncherProcess;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * ResNetSynthetic at 2 ranks (ResNet-18, 64×64, batch 2 per rank, 3 steps, {@code --rank-seed}: the
 * ranks start from different weights and train on different batches): both ranks print the same
 * check line, and the parameters equal (1e-5) one process that trains on both ranks' batches.
 *
 * <p>Why the reference is not one forward over the concatenated batch of 4: in training mode
 * BatchNorm normalises with the statistics of the batch it sees, and under DDP each rank's BN sees
 * its own 2 images, so one batch of 4 would give other activations and other gradients. The
 * reference therefore runs one forward per rank's batch (each BN sees exactly what that rank's BN
 * saw) and backpropagates the mean of the two losses: its gradient is (g0 + g1) / 2, what DDP's
 * all-reduce averages. The running statistics differ (DDP broadcasts rank 0's before each forward),
 * but training-mode forwards do not read them and the check covers parameters only. The reference
 * starts from rank 0's weights (seed 0), which DDP broadcasts at construction; rank 1's batch is
 * the one drawn after building the seed-1 model, as rank 1 draws it.
 */
@Timeout(value = 300, unit = TimeUnit.SECONDS) // backstop above LauncherProcess's 240 s bound
class ResNetSyntheticDdpTest {
    private static final Pattern CHECK = Pattern.compile("\\[rank(\\d)\\]: (check rank=\\d loss=\\S+ param_sum=(\\S+) param_crc=([0-9a-f]{8}))");
    private static final Pattern SUMMARY = Pattern.compile("\\[rank(\\d)\\]: summary rank=\\d world=2 model=resnet18 batch=2"
            + " image=64 steps=2 seconds=[\\d.]+ images_per_s=[\\d.]+ params=(\\d+)");
    private static final int BATCH = 2;
    private static final int IMAGE = 64;
    private static final int STEPS = 3; // 1 warm-up + 2 timed
    private static final double LR = 0.01;

    @TempDir
    Path dir;

    @Test
    void twoRanksEndEqualToOneProcessOverBothRanksBatches() throws Exception {
        Path saved = dir.resolve("ddp.safetensors");
        LauncherProcess.Result r = LauncherProcess.run("--nproc-per-node", "2", "--master-port",
                Integer.toString(LauncherProcess.freePort()), "org.ddp4j.examples.ResNetSynthetic", "--model", "resnet18",
                "--batch-size", Integer.toString(BATCH), "--image-size", Integer.toString(IMAGE), "--warmup-steps", "1",
                "--steps", "2", "--rank-seed", "--threads", "1", "--save", saved.toString());
        assertEquals(0, r.exitCode(), "launcher failed:\n" + r.text());

        String[] checks = new String[2];
        String crc = null;
        for (String line : r.lines()) {
            Matcher m = CHECK.matcher(line);
            if (m.find()) {
                // sum and crc (the losses differ: each rank's last loss is on its own batch)
                checks[Integer.parseInt(m.group(1))] = m.group(3) + " " + m.group(4);
                crc = m.group(4);
            }
        }
        assertTrue(checks[0] != null && checks[1] != null, "no check line from each rank:\n" + r.text());
        assertEquals(checks[0], checks[1], "the ranks ended with different parameters:\n" + r.text());
        assertEquals(2, r.lines().stream().filter(l -> SUMMARY.matcher(l).find()).count(), r.text());
        assertTrue(r.text().contains("params=11689512"), r.text());

        try (var scope = Tensors.scope()) {
            Map<String, Tensor> ddp = SafeTensors.loadFile(saved);
            Module reference = ResNetSynthetic.createModel("resnet18", 0);
            ResNetSynthetic.Batch batch0 = ResNetSynthetic.syntheticBatch(Generator.defaultGenerator(), BATCH, IMAGE);
            ResNetSynthetic.createModel("resnet18", 1); // rank 1's generator position after its model
            ResNetSynthetic.Batch batch1 = ResNetSynthetic.syntheticBatch(Generator.defaultGenerator(), BATCH, IMAGE);
            train(reference, List.of(batch0, batch1));

            // the saved file holds the parameters the check line summed
            List<Tensor> saveParams = new ArrayList<>();
            reference.namedParameters().keySet().forEach(name -> saveParams.add(ddp.get(name)));
            assertEquals(crc, String.format("%08x", ResNetSynthetic.parameterCrc(saveParams)));
            double maxDiff = maxDifference(reference, ddp); // 0 here: halving is exact, so (g0 + g1) / 2 = g0 / 2 + g1 / 2
            assertTrue(maxDiff <= 1e-5, "2 ranks differ from one process over both batches by " + maxDiff);

            // the check can fail: training on rank 0's batch alone ends elsewhere
            Module alone = ResNetSynthetic.createModel("resnet18", 0);
            train(alone, List.of(batch0));
            assertTrue(maxDifference(alone, ddp) > 1e-4, "rank 1's batch made no difference");
        }
    }

    /** STEPS steps of SGD(LR, momentum 0.9) on the mean of the batches' losses, one forward per batch. */
    private static void train(Module model, List<ResNetSynthetic.Batch> batches) {
        model.train();
        SGD optimizer = new SGD(model.parameters(), LR, 0.9, 0, 0, false);
        CrossEntropyLoss criterion = new CrossEntropyLoss();
        for (int step = 0; step < STEPS; step++) {
            try (var scope = Tensors.scope()) {
                optimizer.zeroGrad();
                Tensor loss = null;
                for (ResNetSynthetic.Batch b : batches) {
                    Tensor l = criterion.forward(model.forward(b.input()), b.target());
                    loss = loss == null ? l : loss.add(l);
                }
                loss.mul(1f / batches.size()).backward();
                optimizer.step();
            }
        }
    }

    /** The largest |a - b| / (1 + |b|) over all parameters of model against the same names in state. */
    private static double maxDifference(Module model, Map<String, Tensor> state) {
        double max = 0;
        for (Map.Entry<String, Tensor> e : model.namedParameters().entrySet()) {
            float[] a = e.getValue().toFloatArray();
            float[] b = state.get(e.getKey()).toFloatArray();
            assertEquals(a.length, b.length, e.getKey());
            for (int i = 0; i < a.length; i++) {
                max = Math.max(max, Math.abs(a[i] - b[i]) / (1 + Math.abs(b[i])));
            }
        }
        return max;
    }
}
