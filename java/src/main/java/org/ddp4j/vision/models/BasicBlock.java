package org.ddp4j.vision.models;

import org.ddp4j.nn.BatchNorm2d;
import org.ddp4j.nn.Conv2d;
import org.ddp4j.nn.Module;
import org.ddp4j.nn.ReLU;
import org.ddp4j.tensor.Generator;
import org.ddp4j.tensor.Tensor;

/**
 * ResNet-18/34's residual block: two 3x3 convolutions, {@code relu(bn2(conv2(relu(bn1(conv1(x))))) + identity)},
 * identity being x or {@code downsample(x)}. Mirrors {@code torchvision.models.resnet.BasicBlock}
 * (groups 1, base width 64, dilation 1): children {@code conv1, bn1, relu, conv2, bn2} and, when
 * given, {@code downsample}, so its parameters are named {@code conv1.weight, bn1.weight, ...,
 * downsample.0.weight, downsample.1.running_var} as torchvision's.
 *
 * <p>Input float32 [N, inplanes, H, W]; output [N, planes, H', W'] with H' = floor((H - 1) / stride) + 1.
 */
public class BasicBlock extends Module {
    /** Output channels ÷ planes. Mirrors {@code BasicBlock.expansion}. */
    public static final int EXPANSION = 1;

    private final Conv2d conv1;
    private final BatchNorm2d bn1;
    private final Conv2d conv2;
    private final BatchNorm2d bn2;
    private final Module downsample;

    /**
     * Mirrors {@code BasicBlock(inplanes, planes, stride, downsample)}.
     *
     * @param inplanes input channels
     * @param planes output channels of both convolutions
     * @param stride stride of conv1 (and what downsample must apply to the identity)
     * @param downsample maps x to the output's shape when stride ≠ 1 or inplanes ≠ planes
     *     (torchvision: {@code Sequential(conv1x1(inplanes, planes, stride), BatchNorm2d(planes))}), or null
     * @param generator initialises the convolutions (PyTorch's default init; {@link ResNet} then
     *     applies torchvision's)
     * @throws IllegalArgumentException if a channel count or the stride is not positive
     */
    public BasicBlock(int inplanes, int planes, int stride, Module downsample, Generator generator) {
        this.conv1 = registerModule("conv1", ResNet.conv3x3(inplanes, planes, stride, generator));
        this.bn1 = registerModule("bn1", new BatchNorm2d(planes));
        // torchvision's relu child (state dict, repr); forward applies it fused into the batch norms.
        registerModule("relu", new ReLU(true)); // torchvision: ReLU(inplace=True)
        this.conv2 = registerModule("conv2", ResNet.conv3x3(planes, planes, 1, generator));
        this.bn2 = registerModule("bn2", new BatchNorm2d(planes));
        this.downsample = downsample == null ? null : registerModule("downsample", downsample);
    }

    /**
     * The block's output.
     *
     * @param x float32 [N, inplanes, H, W]
     * @return float32 [N, planes, H', W']
     * @throws IllegalArgumentException if x has another channel count, or the residual's shape
     *     differs from the identity's (a missing downsample)
     */
    @Override
    public Tensor forward(Tensor x) {
        // bn then relu, and bn, + identity, relu, each as one fused pass (BatchNorm2d.forwardRelu):
        // torchvision's values; the relu child stays registered as in torchvision.
        // Each batch norm's output is released once its last reader here has run (the backward
        // recomputes it from the conv output), and each conv output is kept only until its batch
        // norm's backward (ResNet.bnRelu; Tensor.release). The block's input is released by
        // the Sequential it is in, once read.
        Tensor out1 = ResNet.bnRelu(bn1, conv1.forward(x), null);
        Tensor out = conv2.forward(out1);
        out1.release();
        Tensor identity = downsample == null ? x : downsample.forward(x);
        Tensor y = ResNet.bnRelu(bn2, out, ResNet.checkResidual(out, identity));
        if (identity != x) {
            identity.release();
        }
        return y;
    }

    /** The batch norm whose weight {@code zero_init_residual} zeroes: bn2. */
    public BatchNorm2d lastBatchNorm() {
        return bn2;
    }
}
