package org.ddp4j.vision.transforms;

import org.ddp4j.tensor.Generator;

/**
 * Scales pixel values 0..255 to [0, 1] (float32 division by 255): the scaling half of
 * {@code torchvision.transforms.ToTensor} (the layout half is the dataset's, which already gives
 * [C, H, W]). For datasets that give raw pixel values; {@link org.ddp4j.data.MnistDataset} scales already.
 */
public final class ToTensor implements Transform {
    @Override
    public Image apply(Image image, Generator random) {
        float[] x = image.data();
        for (int i = 0; i < x.length; i++) {
            x[i] = x[i] / 255f;
        }
        return image;
    }

    @Override
    public String toString() {
        return "ToTensor()";
    }
}
