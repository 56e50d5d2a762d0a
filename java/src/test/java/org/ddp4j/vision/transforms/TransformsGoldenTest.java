package org.ddp4j.vision.transforms;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.ddp4j.data.Batch;
import org.ddp4j.data.DataLoader;
import org.ddp4j.data.TensorDataset;
import org.ddp4j.tensor.Generator;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;
import org.ddp4j.testing.Golden;
import org.junit.jupiter.api.Test;

/**
 * The transforms against torchvision's (scripts/golden/transforms_golden.py) with the random
 * choices given explicitly, bit for bit; and the random choices' range and reproducibility.
 */
class TransformsGoldenTest {
    private static final Golden G = Golden.load("transforms");

    private static Image image(String key) {
        long[] s = G.shape(key);
        return new Image(G.floats(key), (int) s[0], (int) s[1], (int) s[2]);
    }


    private static final double[] MEAN = {0.485, 0.456, 0.406};
    private static final double[] STD = {0.229, 0.224, 0.225};

    @Test
    void deterministicTransformsMatchTorchvisionBitForBit() {
        assertArrayEquals(G.floats("to_tensor"), new ToTensor().apply(image("raw"), null).data());
        assertArrayEquals(G.floats("normalize"), new Normalize(MEAN, STD).apply(image("image"), null).data());
        assertArrayEquals(G.floats("hflip"), RandomHorizontalFlip.flip(image("image")).data());
        assertArrayEquals(G.floats("hflip"), new RandomHorizontalFlip(1).apply(image("image"), new Generator(0)).data());
        assertArrayEquals(G.floats("image"), new RandomHorizontalFlip(0).apply(image("image"), new Generator(0)).data());
    }

    @Test
    void cropsAtGivenCornersMatchTorchvisionsPadThenCrop() {
        int[][] cases = {{0, 0, 0}, {1, 3, 0}, {0, 0, 2}, {3, 4, 2}, {5, 5, 2}, {2, 1, 1}};
        for (int[] c : cases) {
            String key = "crop_" + c[0] + "_" + c[1] + "_" + c[2];
            Image out = new RandomCrop(4, 3, c[2]).crop(image("image"), c[0], c[1]);
            assertArrayEquals(G.shape(key), out.shape(), key);
            assertArrayEquals(G.floats(key), out.data(), key);
        }
        Image composed = new Normalize(MEAN, STD).apply(RandomHorizontalFlip.flip(
                new RandomCrop(4, 3, 1).crop(image("image"), 2, 1)), null);
        assertArrayEquals(G.floats("composed"), composed.data());
    }

    @Test
    void randomCropReachesEveryCornerAndFlipHalfTheTime() {
        RandomCrop crop = new RandomCrop(4, 3, 2);
        Set<String> corners = new HashSet<>();
        Generator g = new Generator(1);
        float[] marker = new float[5 * 6];
        for (int i = 0; i < marker.length; i++) {
            marker[i] = i + 1; // distinct values locate the window
        }
        for (int k = 0; k < 2000; k++) {
            Image out = crop.apply(new Image(marker.clone(), 1, 5, 6), g);
            corners.add(java.util.Arrays.toString(out.data()));
        }
        assertEquals(6 * 8, corners.size(), "every top-left corner of the 9 x 10 padded image, (0..5) x (0..7)");
        int flipped = 0;
        for (int k = 0; k < 4000; k++) {
            Image out = new RandomHorizontalFlip().apply(new Image(new float[] {1, 2}, 1, 1, 2), g);
            flipped += out.data()[0] == 2 ? 1 : 0;
        }
        assertTrue(flipped > 1800 && flipped < 2200, "flipped " + flipped + " of 4000");
    }

    @Test
    void aTransformedDatasetIsReproduciblePerEpochAndIndexWithAnyNumberOfWorkers() {
        float[] x = new Generator(3).uniform(40 * 1 * 5 * 6, 0f, 1f);
        long[] y = new long[40];
        TensorDataset base;
        try (var scope = Tensors.scope()) {
            base = new TensorDataset(Tensor.of(x, 40, 1, 5, 6).keep(), Tensor.ofLongs(y, 40).keep());
        }
        Transform t = new Compose(new RandomCrop(4, 4, 1), new RandomHorizontalFlip(), new Normalize(new double[] {0.5},
                new double[] {0.25}));
        TransformedDataset data = new TransformedDataset(base, t, 7);
        assertArrayEquals(new long[] {1, 4, 4}, data.exampleShape());
        List<float[]> plain = load(new DataLoader(data, 8), data, 0);
        List<float[]> epoch1 = load(new DataLoader(data, 8), data, 1);
        try (DataLoader threaded = new DataLoader(data, 8, null, false, DataLoader.Options.defaults().numWorkers(3))) {
            List<float[]> again = load(threaded, data, 0);
            for (int i = 0; i < plain.size(); i++) {
                assertArrayEquals(plain.get(i), again.get(i), "batch " + i + " with 3 workers");
            }
        }
        assertTrue(!java.util.Arrays.equals(plain.get(0), epoch1.get(0)), "epoch 1 drew the same crops as epoch 0");
    }

    private static List<float[]> load(DataLoader loader, TransformedDataset data, int epoch) {
        data.setEpoch(epoch);
        List<float[]> out = new ArrayList<>();
        for (Batch b : loader) {
            try (b) {
                out.add(b.inputs().toFloatArray());
            }
        }
        return out;
    }

    @Test
    void badArgumentsAreRefusedNamingTheFix() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> new RandomCrop(8, 0).outputShape(new long[] {1, 5, 6}));
        assertTrue(e.getMessage().contains("required crop size (8, 8) is larger than the padded input image size (5, 6)"),
                e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> new Normalize(new double[] {0.5}, new double[] {0}));
        assertTrue(e.getMessage().contains("std evaluated to zero"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class,
                () -> new Normalize(MEAN, STD).apply(new Image(new float[2], 2, 1, 1), null));
        assertTrue(e.getMessage().contains("3 means and stds for an image of 2 channels"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> new RandomHorizontalFlip(1.5));
    }
}
