package org.ddp4j.examples;

import java.nio.file.Path;
import org.ddp4j.data.MnistDataset;
import picocli.CommandLine.Option;

/**
 * The Fashion-MNIST demos' data options ({@code --data}, {@code --limit}, {@code --test-limit}),
 * shared by {@link ConvNetDemo} and {@link MnistDistributed} as a picocli mixin.
 */
final class FashionMnistOption {
    @Option(names = "--data", description = "Folder with the Fashion-MNIST IDX files (default: ${DEFAULT-VALUE}).")
    Path data = MnistDataset.DEFAULT_DIR;

    @Option(names = "--limit", description = "Use only the first N training images (default: all).")
    int limit = 0;

    @Option(names = "--test-limit", description = "Evaluate on only the first N test images (default: all).")
    int testLimit = 0;

    /** The training set, at most {@code --limit} images. */
    MnistDataset train() {
        return new MnistDataset(data, true, limit);
    }

    /** The test set, at most {@code --test-limit} images. */
    MnistDataset test() {
        return new MnistDataset(data, false, testLimit);
    }
}
