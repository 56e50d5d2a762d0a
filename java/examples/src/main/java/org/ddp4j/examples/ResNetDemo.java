package org.ddp4j.examples;

import org.ddp4j.nn.Module;
import org.ddp4j.tensor.Generator;
import org.ddp4j.vision.models.ResNet;
import org.ddp4j.internal.VersionProvider;
import picocli.CommandLine.Command;

/**
 * ResNet-18 on Fashion-MNIST under DDP: {@link ConvNetDemo}'s job, options and lines ({@code --limit},
 * {@code --epochs}, {@code --save/--resume}, {@code --plot}, the progress bar, the summary lines)
 * with torchvision's ResNet-18 in its CIFAR form instead of the two-conv network: a 3×3 stride-1
 * stem on one input channel and no max-pool, so the 28×28 images keep 28×28 in layer1 and 4×4
 * in layer4; 10 classes; 11.2 M parameters. Its defaults differ in the schedule: {@code --scheduler onecycle}
 * (stepped every batch) with a peak lr of 0.1 for SGD, which reaches 0.90 test accuracy in one epoch on
 * 2 ranks where a constant lr ends near 0.89. Start it with
 * {@code scripts/ddp4j-run --nproc-per-node 2 org.ddp4j.examples.ResNetDemo}.
 */
@Command(name = "ResNetDemo", mixinStandardHelpOptions = true, versionProvider = VersionProvider.class,
        description = "ResNet-18 (CIFAR stem) on Fashion-MNIST with DDP (run under scripts/ddp4j-run).")
public final class ResNetDemo extends ConvNetDemo {
    public static void main(String[] args) {
        System.exit(DemoCommandLine.execute(new ResNetDemo(), args));
    }

    /** ResNetDemo's defaults: --scheduler onecycle (picocli shows it as the default). */
    public ResNetDemo() {
        schedulerChoice = SchedulerChoice.onecycle;
    }

    /** SGD's peak lr under the one-cycle schedule: 0.1; the Adams keep their own default. */
    @Override
    Double defaultLr(OptimizerChoice choice) {
        return choice == OptimizerChoice.sgd ? 0.1 : null;
    }

    /**
     * ResNet-18, CIFAR stem, 1 input channel, 10 classes, torchvision's initialisation.
     *
     * @throws IllegalArgumentException if --dropout was given (ResNet-18 has no dropout layer)
     */
    @Override
    Module createModel(Generator generator) {
        if (dropout != 0) {
            throw new IllegalArgumentException("--dropout " + dropout + " is the ConvNet's: ResNet-18 has no dropout"
                    + " layer; leave --dropout out");
        }
        return ResNet.resnet18(ResNet.Options.defaults().numClasses(10).inChannels(1).cifarStem(true).generator(generator));
    }

    @Override
    String modelName() {
        return "ResNet-18";
    }
}
