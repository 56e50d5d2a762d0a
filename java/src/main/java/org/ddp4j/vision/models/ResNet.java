package org.ddp4j.vision.models;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import org.ddp4j.nn.AdaptiveAvgPool2d;
import org.ddp4j.nn.BatchNorm2d;
import org.ddp4j.nn.Conv2d;
import org.ddp4j.nn.Flatten;
import org.ddp4j.nn.Identity;
import org.ddp4j.nn.Init;
import org.ddp4j.nn.Linear;
import org.ddp4j.nn.MaxPool2d;
import org.ddp4j.nn.Module;
import org.ddp4j.nn.ReLU;
import org.ddp4j.nn.Sequential;
import org.ddp4j.serialization.SafeTensors;
import org.ddp4j.tensor.Generator;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;

/**
 * torchvision's residual networks: {@code torchvision.models.ResNet} and its factories
 * {@code resnet18 / 34 / 50 / 101 / 152} (without pretrained weights; load them with
 * {@link #loadTorchvisionWeights}). Built exactly as torchvision 0.14 builds them: the same
 * children, so the same parameter and buffer names in the same order ({@code conv1.weight,
 * bn1.weight, bn1.bias, bn1.running_mean, bn1.running_var, bn1.num_batches_tracked,
 * layer1.0.conv1.weight, ..., layer2.0.downsample.0.weight, ..., fc.weight, fc.bias}), the same
 * shapes and parameter counts (resnet18 11,689,512; resnet34 21,797,672; resnet50 25,557,032 with
 * 1000 classes), and torchvision's initialisation: {@code kaiming_normal_(mode='fan_out',
 * nonlinearity='relu')} for every convolution, batch norm weight 1 and bias 0, Linear's default
 * init for {@code fc}, and with {@code zero_init_residual} the last batch norm of each block
 * zeroed. The random streams are ddp4j's (see {@link Generator}), not PyTorch's.
 *
 * <p>Input float32 [N, inChannels, H, W] (224 × 224 for ImageNet, 32 × 32 or 28 × 28 with the CIFAR
 * stem); output logits float32 [N, numClasses].
 *
 * <pre>{@code
 * ResNet model = ResNet.resnet50(10);
 * ResNet cifar = ResNet.resnet18(ResNet.Options.defaults().numClasses(10).cifarStem(true).inChannels(1));
 * }</pre>
 */
public class ResNet extends Module {
    /** The residual block a ResNet stacks: torchvision's {@code block} argument. */
    public enum Block {
        /** {@link BasicBlock}: two 3x3 convolutions (ResNet-18, 34). */
        BASIC(BasicBlock.EXPANSION),
        /** {@link Bottleneck}: 1x1, 3x3, 1x1 convolutions (ResNet-50, 101, 152). */
        BOTTLENECK(Bottleneck.EXPANSION);

        private final int expansion;

        Block(int expansion) {
            this.expansion = expansion;
        }

        /** Output channels ÷ planes: 1 or 4. Mirrors {@code block.expansion}. */
        public int expansion() {
            return expansion;
        }
    }

    /**
     * The model's options: torchvision's {@code num_classes} (default 1000) and
     * {@code zero_init_residual} (default false), plus two common variants torchvision leaves to
     * the user: {@code cifarStem} (conv1 3x3, stride 1, padding 1 and no max pool, for 32 × 32 or
     * 28 × 28 images; default false) and {@code inChannels} (conv1's input channels, default 3;
     * Fashion-MNIST has 1), and the generator that draws the initial weights (default
     * {@link Generator#defaultGenerator()}). Each wither returns a changed copy. The constructor
     * throws {@code IllegalArgumentException} if numClasses or inChannels is not positive or
     * generator is null.
     */
    public record Options(int numClasses, boolean zeroInitResidual, boolean cifarStem, int inChannels, Generator generator) {
        public Options {
            if (numClasses <= 0 || inChannels <= 0 || generator == null) {
                throw new IllegalArgumentException("ResNet.Options(numClasses=" + numClasses + ", inChannels=" + inChannels
                        + (generator == null ? ", generator=null" : "")
                        + "): numClasses and inChannels must be positive and generator non-null");
            }
        }

        /** torchvision's defaults: 1000 classes, no zero_init_residual, the ImageNet stem, 3 channels. */
        public static Options defaults() {
            return new Options(1000, false, false, 3, Generator.defaultGenerator());
        }

        /** The size of the output ({@code fc}'s out_features). */
        public Options numClasses(int value) {
            return new Options(value, zeroInitResidual, cifarStem, inChannels, generator);
        }

        /** Whether each block's last batch norm weight starts at zero (each block then starts as the identity). */
        public Options zeroInitResidual(boolean value) {
            return new Options(numClasses, value, cifarStem, inChannels, generator);
        }

        /** Whether conv1 is 3x3 stride 1 padding 1 with no max pool after it (instead of 7x7 stride 2 and max pool 3/2/1). */
        public Options cifarStem(boolean value) {
            return new Options(numClasses, zeroInitResidual, value, inChannels, generator);
        }

        /** Channels of the input images (conv1's in_channels). */
        public Options inChannels(int value) {
            return new Options(numClasses, zeroInitResidual, cifarStem, value, generator);
        }

        /** The source of the initial weights (same seed, same model). */
        public Options generator(Generator value) {
            return new Options(numClasses, zeroInitResidual, cifarStem, inChannels, value);
        }
    }

    private final Block block;
    private final Options options;
    private final Conv2d conv1;
    private final BatchNorm2d bn1;
    private final Module maxpool;
    private final Sequential[] layers = new Sequential[4];
    private final Module avgpool;
    /** What runs between the stem's batch norm and the flatten: maxpool, layer1..layer4, avgpool. */
    private final Module[] stages;
    private final Linear fc;
    private final Flatten flatten = new Flatten();
    private int inplanes = 64;

    /**
     * Mirrors {@code torchvision.models.ResNet(block, layers, num_classes, zero_init_residual)}
     * (groups 1, width_per_group 64, no dilation, BatchNorm2d).
     *
     * @param block the residual block
     * @param blocksPerLayer how many blocks layer1..layer4 have (resnet18 {2, 2, 2, 2}, resnet50 {3, 4, 6, 3})
     * @throws IllegalArgumentException if blocksPerLayer does not have 4 positive counts
     */
    public ResNet(Block block, int[] blocksPerLayer, Options options) {
        if (blocksPerLayer.length != 4 || Arrays.stream(blocksPerLayer).anyMatch(n -> n <= 0)) {
            throw new IllegalArgumentException("ResNet: blocksPerLayer must be 4 positive block counts (layer1..layer4), got "
                    + Arrays.toString(blocksPerLayer));
        }
        this.block = block;
        this.options = options;
        Generator g = options.generator();
        this.conv1 = registerModule("conv1", options.cifarStem()
                ? new Conv2d(options.inChannels(), 64, 3, 1, 1, false, g)
                : new Conv2d(options.inChannels(), 64, 7, 2, 3, false, g));
        this.bn1 = registerModule("bn1", new BatchNorm2d(64));
        // torchvision's relu child (state dict, repr); forward applies it fused into the batch norms.
        registerModule("relu", new ReLU(true)); // torchvision: ReLU(inplace=True)
        this.maxpool = registerModule("maxpool", options.cifarStem() ? new Identity() : new MaxPool2d(3, 2, 1));
        int[] planes = {64, 128, 256, 512};
        for (int i = 0; i < 4; i++) {
            layers[i] = registerModule("layer" + (i + 1), makeLayer(planes[i], blocksPerLayer[i], i == 0 ? 1 : 2, g));
        }
        this.avgpool = registerModule("avgpool", new AdaptiveAvgPool2d(1, 1)); // torchvision: AdaptiveAvgPool2d((1, 1))
        this.stages = new Module[] {maxpool, layers[0], layers[1], layers[2], layers[3], avgpool};
        this.fc = registerModule("fc", new Linear(512 * block.expansion(), options.numClasses(), true, g));
        initialise(this, options);
    }

    /** torchvision's {@code _make_layer}: the first block changes stride and width (with a downsample), the rest keep them. */
    private Sequential makeLayer(int planes, int blocks, int stride, Generator g) {
        int outChannels = planes * block.expansion();
        Module downsample = null;
        if (stride != 1 || inplanes != outChannels) {
            downsample = new Sequential(conv1x1(inplanes, outChannels, stride, g), new BatchNorm2d(outChannels));
        }
        Module[] blockModules = new Module[blocks];
        blockModules[0] = newBlock(inplanes, planes, stride, downsample, g);
        inplanes = outChannels;
        for (int b = 1; b < blocks; b++) {
            blockModules[b] = newBlock(inplanes, planes, 1, null, g);
        }
        return new Sequential(blockModules);
    }

    private Module newBlock(int in, int planes, int stride, Module downsample, Generator g) {
        return block == Block.BASIC ? new BasicBlock(in, planes, stride, downsample, g)
                : new Bottleneck(in, planes, stride, downsample, g);
    }

    /** torchvision's loop over {@code self.modules()} after construction. */
    private static void initialise(Module root, Options options) {
        for (Module m : modules(root)) {
            if (m instanceof Conv2d conv) {
                Init.kaimingNormal(conv.weight(), 0, Init.FanMode.FAN_OUT, "relu", options.generator());
            } else if (m instanceof BatchNorm2d bn) {
                bn.weight().fill(1);
                bn.bias().fill(0);
            }
        }
        if (options.zeroInitResidual()) {
            for (Module m : modules(root)) {
                if (m instanceof Bottleneck b) {
                    b.lastBatchNorm().weight().fill(0);
                } else if (m instanceof BasicBlock b) {
                    b.lastBatchNorm().weight().fill(0);
                }
            }
        }
    }

    /** root and its descendants, depth first in registration order. Mirrors {@code Module.modules()}. */
    private static List<Module> modules(Module root) {
        List<Module> out = new ArrayList<>();
        out.add(root);
        for (Module child : root.namedChildren().values()) {
            out.addAll(modules(child));
        }
        return out;
    }

    /** torchvision's {@code conv3x3}: 3x3, padding 1, no bias. */
    static Conv2d conv3x3(int in, int out, int stride, Generator g) {
        return new Conv2d(in, out, 3, stride, 1, false, g);
    }

    /** torchvision's {@code conv1x1}: 1x1, no padding, no bias. */
    static Conv2d conv1x1(int in, int out, int stride, Generator g) {
        return new Conv2d(in, out, 1, stride, 0, false, g);
    }

    /**
     * {@code relu(bn(convOut) + residual)} (residual may be null), with convOut released: a step
     * keeps it only until bn's backward has read it ({@link Tensor#release()}).
     */
    static Tensor bnRelu(BatchNorm2d bn, Tensor convOut, Tensor residual) {
        Tensor y = bn.forwardRelu(convOut, residual);
        convOut.release();
        return y;
    }

    /**
     * identity, after checking that it has the residual's shape, with a message that names the
     * likely cause when it does not.
     */
    static Tensor checkResidual(Tensor out, Tensor identity) {
        if (!Arrays.equals(out.shape(), identity.shape())) {
            throw new IllegalArgumentException("residual block: the residual " + Arrays.toString(out.shape())
                    + " and the identity " + Arrays.toString(identity.shape())
                    + " differ; a block that changes stride or channels needs a downsample");
        }
        return identity;
    }

    /** ResNet-18 with 1000 classes. Mirrors {@code torchvision.models.resnet18()}. */
    public static ResNet resnet18() {
        return resnet18(Options.defaults());
    }

    /** ResNet-18 with numClasses outputs. Mirrors {@code resnet18(num_classes=numClasses)}. */
    public static ResNet resnet18(int numClasses) {
        return resnet18(Options.defaults().numClasses(numClasses));
    }

    /** ResNet-18 (BasicBlock, 2-2-2-2). Mirrors {@code resnet18(**kwargs)}. */
    public static ResNet resnet18(Options options) {
        return new ResNet(Block.BASIC, new int[] {2, 2, 2, 2}, options);
    }

    /** ResNet-34 with 1000 classes. Mirrors {@code torchvision.models.resnet34()}. */
    public static ResNet resnet34() {
        return resnet34(Options.defaults());
    }

    /** ResNet-34 with numClasses outputs. Mirrors {@code resnet34(num_classes=numClasses)}. */
    public static ResNet resnet34(int numClasses) {
        return resnet34(Options.defaults().numClasses(numClasses));
    }

    /** ResNet-34 (BasicBlock, 3-4-6-3). Mirrors {@code resnet34(**kwargs)}. */
    public static ResNet resnet34(Options options) {
        return new ResNet(Block.BASIC, new int[] {3, 4, 6, 3}, options);
    }

    /** ResNet-50 with 1000 classes. Mirrors {@code torchvision.models.resnet50()}. */
    public static ResNet resnet50() {
        return resnet50(Options.defaults());
    }

    /** ResNet-50 with numClasses outputs. Mirrors {@code resnet50(num_classes=numClasses)}. */
    public static ResNet resnet50(int numClasses) {
        return resnet50(Options.defaults().numClasses(numClasses));
    }

    /** ResNet-50 (Bottleneck, 3-4-6-3). Mirrors {@code resnet50(**kwargs)}. */
    public static ResNet resnet50(Options options) {
        return new ResNet(Block.BOTTLENECK, new int[] {3, 4, 6, 3}, options);
    }

    /** ResNet-101 (Bottleneck, 3-4-23-3). Mirrors {@code resnet101(**kwargs)}. */
    public static ResNet resnet101(Options options) {
        return new ResNet(Block.BOTTLENECK, new int[] {3, 4, 23, 3}, options);
    }

    /** ResNet-152 (Bottleneck, 3-8-36-3). Mirrors {@code resnet152(**kwargs)}. */
    public static ResNet resnet152(Options options) {
        return new ResNet(Block.BOTTLENECK, new int[] {3, 8, 36, 3}, options);
    }

    /** The names {@link #of} knows, as torchvision's {@code models.list_models()} spells them. */
    public static final List<String> MODEL_NAMES = List.of("resnet18", "resnet34", "resnet50", "resnet101", "resnet152");

    /**
     * The model called {@code name}, as {@code torchvision.models.get_model(name, **options)}.
     *
     * @param name one of {@link #MODEL_NAMES}
     * @throws IllegalArgumentException naming the known models when name is another
     */
    public static ResNet of(String name, Options options) {
        switch (name) {
            case "resnet18": return resnet18(options);
            case "resnet34": return resnet34(options);
            case "resnet50": return resnet50(options);
            case "resnet101": return resnet101(options);
            case "resnet152": return resnet152(options);
            default:
                throw new IllegalArgumentException("unknown model '" + name + "': use one of " + String.join(", ", MODEL_NAMES));
        }
    }

    /**
     * Logits for a batch of images. Mirrors {@code ResNet.forward}: conv1, bn1, relu, maxpool,
     * layer1..layer4, avgpool, flatten, fc.
     *
     * @param x float32 [N, inChannels, H, W]
     * @return float32 [N, numClasses]
     * @throws IllegalArgumentException if x is not 4-D float32 with inChannels channels, or too small for the stem
     */
    @Override
    public Tensor forward(Tensor x) {
        // Every intermediate result is released once its reader has run (see Tensor.release):
        // batch norm outputs are recomputed in the backward, conv outputs kept until their batch
        // norm's backward; the pools' backwards need only indices and shapes; the layers do the
        // same inside. A stage that passes its input on (the CIFAR stem's Identity) releases nothing.
        Tensor out = bnRelu(bn1, conv1.forward(x), null);
        for (Module stage : stages) {
            Tensor next = stage.forward(out);
            if (next != out) {
                out.release();
            }
            out = next;
        }
        return fc.forward(flatten.forward(out));
    }

    /**
     * Copies a torchvision state dict saved in the safetensors format into this model, strictly:
     * every name and shape must match ({@link #loadStateDict(Map, boolean)} with strict). The
     * tensors read are freed before it returns. Returns this.
     *
     * <p>With the {@code safetensors} package: {@code save_file(torchvision.models.resnet50(weights=...).state_dict(), f)}.
     * Without it (Debian's torch 1.13), {@code save_safetensors(state_dict, f)} in
     * scripts/golden/resnet_golden.py writes the same format in ten lines of Python.
     *
     * @throws java.io.UncheckedIOException when the file is missing or not a valid safetensors file
     * @throws IllegalArgumentException listing the missing and unexpected names and the shape
     *     mismatches (e.g. weights of another depth, or of another numClasses)
     */
    public ResNet loadTorchvisionWeights(Path file) {
        try (var scope = Tensors.scope()) {
            loadStateDict(SafeTensors.loadFile(file), true);
        }
        return this;
    }

    /** The block type. */
    public Block block() {
        return block;
    }

    /** The options it was built with. */
    public Options options() {
        return options;
    }

    /** The stem convolution. */
    public Conv2d conv1() {
        return conv1;
    }

    /** layer1..layer4 as index 1..4. */
    public Sequential layer(int index) {
        if (index < 1 || index > 4) {
            throw new IllegalArgumentException("ResNet has layer1..layer4, asked for layer" + index);
        }
        return layers[index - 1];
    }

    /** The classifier, Linear(512 × expansion, numClasses). */
    public Linear fc() {
        return fc;
    }
}
