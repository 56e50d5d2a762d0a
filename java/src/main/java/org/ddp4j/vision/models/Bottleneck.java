package org.ddp4j.vision.models;

import org.ddp4j.nn.BatchNorm2d;
import org.ddp4j.nn.Conv2d;
import org.ddp4j.nn.Module;
import org.ddp4j.nn.ReLU;
import org.ddp4j.tensor.Generator;
import org.ddp4j.tensor.Tensor;

/**
 * ResNet-50/101/152's residual block: 1x1 (to planes), 3x3 (stride here, as torchvision's
 * "ResNet V1.5"), 1x1 (to 4 × planes), each followed by batch norm, ReLU after the first two and
 * after adding the identity (x or {@code downsample(x)}). Mirrors
 * {@code torchvision.models.resnet.Bottleneck} (groups 1, base width 64, dilation 1): children
 * {@code conv1, bn1, conv2, bn2, conv3, bn3, relu} and, when given, {@code downsample}.
 *
 * <p>Input float32 [N, inplanes, H, W]; output [N, 4 planes, H', W'] with H' = floor((H - 1) / stride) + 1.
 */
public class Bottleneck extends Module {
    /** Output channels ÷ planes. Mirrors {@code Bottleneck.expansion}. */
    public static final int EXPANSION = 4;

    private final Conv2d conv1;
    private final BatchNorm2d bn1;
    private final Conv2d conv2;
    private final BatchNorm2d bn2;
    private final Conv2d conv3;
    private final BatchNorm2d bn3;
    private final Module downsample;

    /**
     * Mirrors {@code Bottleneck(inplanes, planes, stride, downsample)}.
     *
     * @param inplanes input channels
     * @param planes width of the 1x1 and 3x3 convolutions; the block outputs 4 × planes channels
     * @param stride stride of the 3x3 convolution (conv2)
     * @param downsample maps x to the output's shape when stride ≠ 1 or inplanes ≠ 4 planes
     *     (torchvision: {@code Sequential(conv1x1(inplanes, 4 planes, stride), BatchNorm2d(4 planes))}), or null
     * @param generator initialises the convolutions (PyTorch's default init; {@link ResNet} then
     *     applies torchvision's)
     * @throws IllegalArgumentException if a channel count or the stride is not positive
     */
    public Bottleneck(int inplanes, int planes, int stride, Module downsample, Generator generator) {
        int width = planes;
        this.conv1 = registerModule("conv1", ResNet.conv1x1(inplanes, width, 1, generator));
        this.bn1 = registerModule("bn1", new BatchNorm2d(width));
        this.conv2 = registerModule("conv2", ResNet.conv3x3(width, width, stride, generator));
        this.bn2 = registerModule("bn2", new BatchNorm2d(width));
        this.conv3 = registerModule("conv3", ResNet.conv1x1(width, planes * EXPANSION, 1, generator));
        this.bn3 = registerModule("bn3", new BatchNorm2d(planes * EXPANSION));
        // torchvision's relu child (state dict, repr); forward applies it fused into the batch norms.
        registerModule("relu", new ReLU(true)); // torchvision: ReLU(inplace=True)
        this.downsample = downsample == null ? null : registerModule("downsample", downsample);
    }

    /**
     * The block's output.
     *
     * @param x float32 [N, inplanes, H, W]
     * @return float32 [N, 4 planes, H', W']
     * @throws IllegalArgumentException if x has another channel count, or the residual's shape
     *     differs from the identity's (a missing downsample)
     */
    @Override
    public Tensor forward(Tensor x) {
        // Each bn then relu, and bn3, + identity, relu, as one fused pass (BatchNorm2d.forwardRelu):
        // torchvision's values; the relu child stays registered as in torchvision.
        // Each batch norm's output is released once its last reader here has run (the backward
        // recomputes it from the conv output), and each conv output is kept only until its batch
        // norm's backward (ResNet.bnRelu; Tensor.release). The block's input is released by
        // the Sequential it is in, once read.
        Tensor out1 = ResNet.bnRelu(bn1, conv1.forward(x), null);
        Tensor out2 = ResNet.bnRelu(bn2, conv2.forward(out1), null);
        out1.release();
        Tensor out = conv3.forward(out2);
        out2.release();
        Tensor identity = downsample == null ? x : downsample.forward(x);
        Tensor y = ResNet.bnRelu(bn3, out, ResNet.checkResidual(out, identity));
        if (identity != x) {
            identity.release();
        }
        return y;
    }

    /** The batch norm whose weight {@code zero_init_residual} zeroes: bn3. */
    public BatchNorm2d lastBatchNorm() {
        return bn3;
    }
}
