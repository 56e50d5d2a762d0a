package org.ddp4j.examples;

import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import org.ddp4j.nn.Module;
import org.ddp4j.optim.Optimizer;
import org.ddp4j.optim.OptimizerStateDict;
import org.ddp4j.serialization.SafeTensors;
import org.ddp4j.tensor.Tensors;

/**
 * The demos' checkpoint, two safetensors files: {@code FILE} holds the model's state dict under
 * PyTorch's names for the bare model (as {@code torch.save(model.module.state_dict())}: no
 * {@code module.} prefix) and {@code FILE.optim} (before the extension: {@code ckpt.safetensors}
 * → {@code ckpt.optim.safetensors}) the optimizer's state (see {@link OptimizerStateDict}). Both
 * carry the metadata {@code epoch}, the number of epochs done, so that a resumed run continues
 * with the next epoch and a pair torn by a crash between the two writes is noticed.
 */
final class TrainingCheckpoint {
    /** Metadata key: epochs completed when the checkpoint was written. */
    static final String EPOCH_KEY = "epoch";

    private TrainingCheckpoint() {}

    /** Where the optimizer state of the checkpoint {@code file} lives: {@code .optim} before its extension. */
    static Path optimizerFile(Path file) {
        String name = file.getFileName().toString();
        int dot = name.lastIndexOf('.');
        String optim = dot > 0 ? name.substring(0, dot) + ".optim" + name.substring(dot) : name + ".optim";
        return file.resolveSibling(optim);
    }

    /** Writes both files, each atomically: the optimizer's first, then the model's. */
    static void save(Path file, Module model, Optimizer optimizer, int epochsDone) {
        OptimizerStateDict state = optimizer.stateDict();
        Map<String, String> optimMetadata = new LinkedHashMap<>(state.metadata());
        optimMetadata.put(EPOCH_KEY, Integer.toString(epochsDone));
        SafeTensors.saveFile(state.tensors(), optimizerFile(file), optimMetadata);
        // "format": "pt" is what safetensors.torch.save_file writes; loaders such as transformers check it
        SafeTensors.saveFile(model.stateDict(), file, Map.of("format", "pt", EPOCH_KEY, Integer.toString(epochsDone)));
    }

    /**
     * The epochs done in the checkpoint, after checking that both files exist, are valid and agree.
     *
     * @throws java.io.UncheckedIOException naming a missing or invalid file
     * @throws IllegalArgumentException when a file has no epoch or the two disagree
     */
    static int epochsDone(Path file) {
        int model = epochOf(file);
        int optim = epochOf(optimizerFile(file));
        if (model != optim) {
            throw new IllegalArgumentException(file + " (epoch " + model + ") and " + optimizerFile(file) + " (epoch "
                    + optim + ") are from different epochs (a run stopped between writing them?): resume from a"
                    + " matching pair");
        }
        return model;
    }

    private static int epochOf(Path file) {
        String epoch = SafeTensors.loadMetadata(file).get(EPOCH_KEY);
        try {
            return Integer.parseInt(epoch);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(file + " has no '" + EPOCH_KEY + "' metadata (" + epoch + "), so it is not"
                    + " a checkpoint written by --save");
        }
    }

    /** Loads the model (strict) and the optimizer state from the checkpoint. */
    static void restore(Path file, Module model, Optimizer optimizer) {
        try (var scope = Tensors.scope()) { // frees the loaded copies
            model.loadStateDict(SafeTensors.loadFile(file));
            optimizer.loadStateDict(OptimizerStateDict.load(optimizerFile(file)));
        }
    }
}
