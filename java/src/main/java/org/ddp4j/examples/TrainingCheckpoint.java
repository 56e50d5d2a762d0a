package org.ddp4j.examples;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.UUID;
import java.util.function.Consumer;
import org.ddp4j.distributed.algorithms.ddpcommhooks.CommHookState;
import org.ddp4j.nn.Module;
import org.ddp4j.optim.Optimizer;
import org.ddp4j.optim.OptimizerStateDict;
import org.ddp4j.serialization.AtomicFiles;
import org.ddp4j.serialization.SafeTensors;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;

/**
 * The demos' checkpoint, two safetensors files: {@code FILE} holds the model's state dict under
 * PyTorch's names for the bare model (as {@code torch.save(model.module.state_dict())}: no
 * {@code module.} prefix) and {@code FILE.optim} (before the extension: {@code ckpt.safetensors}
 * → {@code ckpt.optim.safetensors}) the optimizer's state (see {@link OptimizerStateDict}). Both
 * carry the metadata {@code epoch}, the number of epochs done, and {@code checkpoint}, an id
 * drawn anew for each save, so that a resume knows which optimizer file belongs to the model.
 *
 * <p>A save never leaves the previous checkpoint unresumable, whatever fails or crashes during
 * it. Each file is atomic on its own ({@link AtomicFiles}), but a pair cannot be replaced in one
 * rename while the model keeps its plain name for PyTorch, so the model file is the commit point
 * and the previous optimizer file is kept until the new model is in place:
 *
 * <ol>
 *   <li>both new files are written in full beside the old ones, under hidden names
 *       ({@code .FILE.next}); a full disk fails here, with nothing of the old pair touched;
 *   <li>the old optimizer file gets a second name, {@code FILE.optim.previous} (a hard link);
 *   <li>the new optimizer file is renamed over {@code FILE.optim}, then the new model over
 *       {@code FILE} (the commit); until then {@code FILE} is the old model, and its optimizer
 *       state is in {@code FILE.optim} or {@code FILE.optim.previous};
 *   <li>{@code FILE.optim.previous} is removed.
 * </ol>
 *
 * A resume takes {@code FILE} and whichever of {@code FILE.optim} and {@code FILE.optim.previous}
 * carries its id, so it finds a complete pair after a crash at any point. Files written before
 * ids existed pair by epoch, as they did.
 */
final class TrainingCheckpoint {
    /** Metadata key: epochs completed when the checkpoint was written. */
    static final String EPOCH_KEY = "epoch";
    /** Metadata key: the id of one save, the same in the model file and its optimizer file. */
    static final String CHECKPOINT_KEY = "checkpoint";
    /** Prefix of the communication hook's entries in the optimizer file (see {@link OptimizerStateDict#OTHER_STATE_PREFIX}). */
    static final String COMM_HOOK_PREFIX = OptimizerStateDict.OTHER_STATE_PREFIX;

    /** The steps of a save, in order; a test can fail or stop a save before any of them. */
    enum SaveStep {
        WRITE_OPTIMIZER, WRITE_MODEL, KEEP_PREVIOUS_OPTIMIZER, SWITCH_OPTIMIZER, SWITCH_MODEL, DROP_PREVIOUS_OPTIMIZER
    }

    /** A resumable checkpoint: the model file, the optimizer file that belongs to it, the epochs done. */
    record Pair(Path model, Path optimizer, int epochsDone) {}

    private TrainingCheckpoint() {}

    /** Where the optimizer state of the checkpoint {@code file} lives: {@code .optim} before its extension. */
    static Path optimizerFile(Path file) {
        return withSuffix(file, ".optim");
    }

    /** Where a save keeps the previous optimizer file until the new model is in place: {@code .optim.previous}. */
    static Path previousOptimizerFile(Path file) {
        return withSuffix(file, ".optim.previous");
    }

    private static Path withSuffix(Path file, String suffix) {
        String name = file.getFileName().toString();
        int dot = name.lastIndexOf('.');
        String out = dot > 0 ? name.substring(0, dot) + suffix + name.substring(dot) : name + suffix;
        return file.resolveSibling(out);
    }

    /** Where a save writes a file before switching it in: hidden, beside it. */
    private static Path staged(Path file) {
        return file.resolveSibling("." + file.getFileName() + ".next");
    }

    /** Writes the checkpoint so that the previous one at {@code file} stays resumable until this one is (see the class comment). */
    static void save(Path file, Module model, Optimizer optimizer, int epochsDone) {
        save(file, model, optimizer, epochsDone, null, step -> {});
    }

    /**
     * As {@link #save(Path, Module, Optimizer, int)}, with a DDP communication hook's state (e.g.
     * PowerSGD's iteration count, error feedback and warm-start memory) saved in the optimizer
     * file, each entry named {@link #COMM_HOOK_PREFIX} + its key. hookState may be null (none).
     * PowerSGD's error feedback is this rank's own: a checkpoint written by rank 0 alone gives
     * every rank rank 0's residuals on resume (still the same result on every rank).
     */
    static void save(Path file, Module model, Optimizer optimizer, int epochsDone, CommHookState hookState) {
        save(file, model, optimizer, epochsDone, hookState, step -> {});
    }

    static void save(Path file, Module model, Optimizer optimizer, int epochsDone, Consumer<SaveStep> beforeStep) {
        save(file, model, optimizer, epochsDone, null, beforeStep);
    }

    /**
     * {@link #save(Path, Module, Optimizer, int)}, running {@code beforeStep} before each step: a
     * test seam, where an exception stands for a failure at that point and a copy of the folder
     * for what a crash there would leave.
     *
     * @throws UncheckedIOException (or, for a failure that is not an I/O error, IllegalStateException)
     *     saying that the save failed, why, and where the previous checkpoint is: intact, or that
     *     there was none
     */
    static void save(Path file, Module model, Optimizer optimizer, int epochsDone, CommHookState hookState,
            Consumer<SaveStep> beforeStep) {
        Pair previous;
        String noPrevious = null;
        try {
            previous = Files.exists(file) ? pairOf(file) : null;
            if (previous == null) {
                noPrevious = "there was no checkpoint at " + file + " before, so none was lost";
            }
        } catch (RuntimeException e) {
            previous = null;
            noPrevious = file + " held no resumable checkpoint before this save either (" + e.getMessage() + ")";
        }
        String id = UUID.randomUUID().toString();
        Path optim = optimizerFile(file);
        Path kept = previousOptimizerFile(file);
        Path previousOptimizer = previous == null ? null : previous.optimizer(); // where it is at each step
        try {
            beforeStep.accept(SaveStep.WRITE_OPTIMIZER);
            OptimizerStateDict state = optimizer.stateDict();
            Map<String, String> optimMetadata = new LinkedHashMap<>(state.metadata());
            optimMetadata.put(EPOCH_KEY, Integer.toString(epochsDone));
            optimMetadata.put(CHECKPOINT_KEY, id);
            Map<String, Tensor> optimTensors = new LinkedHashMap<>(state.tensors());
            Map<String, Tensor> hookTensors = hookState == null ? Map.of() : hookState.stateDict();
            try {
                hookTensors.forEach((k, t) -> optimTensors.put(COMM_HOOK_PREFIX + k, t));
                SafeTensors.saveFile(optimTensors, staged(optim), optimMetadata);
            } finally {
                hookTensors.values().forEach(Tensor::close);
            }
            beforeStep.accept(SaveStep.WRITE_MODEL);
            // "format": "pt" is what safetensors.torch.save_file writes; loaders such as transformers check it
            SafeTensors.saveFile(model.stateDict(), staged(file),
                    Map.of("format", "pt", EPOCH_KEY, Integer.toString(epochsDone), CHECKPOINT_KEY, id));
            beforeStep.accept(SaveStep.KEEP_PREVIOUS_OPTIMIZER);
            if (previous != null && previous.optimizer().equals(optim)) {
                AtomicFiles.linkOrCopy(optim, kept); // else it is already the kept one (a save before this one was cut short)
            }
            beforeStep.accept(SaveStep.SWITCH_OPTIMIZER);
            previousOptimizer = kept; // from here on, FILE.optim is the new one
            AtomicFiles.rename(staged(optim), optim);
            beforeStep.accept(SaveStep.SWITCH_MODEL);
            AtomicFiles.rename(staged(file), file);
        } catch (RuntimeException e) {
            deleteQuietly(staged(optim));
            deleteQuietly(staged(file));
            String message = "cannot save the checkpoint of epoch " + epochsDone + " to " + file + ": " + e.getMessage()
                    + "; " + (previous != null ? "the previous checkpoint (epoch " + previous.epochsDone() + ") is intact: "
                    + "--resume " + file + " restores it (its optimizer state is in " + previousOptimizer + ")"
                    : noPrevious);
            if (e instanceof UncheckedIOException io) {
                throw new UncheckedIOException(message, io.getCause());
            }
            throw new IllegalStateException(message, e);
        }
        try {
            beforeStep.accept(SaveStep.DROP_PREVIOUS_OPTIMIZER);
            Files.deleteIfExists(kept);
        } catch (IOException | RuntimeException e) {
            // harmless: the new pair is complete and a resume prefers FILE.optim; the next save replaces it
        }
    }

    private static void deleteQuietly(Path file) {
        try {
            Files.deleteIfExists(file);
        } catch (IOException e) {
            // a leftover hidden .next file is ignored by resumes and replaced by the next save
        }
    }

    /**
     * The checkpoint at {@code file}: its epochs done and the optimizer file that belongs to it,
     * {@code FILE.optim} or, after a save that did not finish, {@code FILE.optim.previous}.
     *
     * @throws UncheckedIOException naming a missing or invalid file
     * @throws IllegalArgumentException when a file has no epoch or no optimizer file matches the model
     */
    static Pair pairOf(Path file) {
        Map<String, String> model = SafeTensors.loadMetadata(file);
        int epoch = epochOf(file, model);
        Path optim = optimizerFile(file);
        Map<String, String> optimMetadata;
        try {
            optimMetadata = SafeTensors.loadMetadata(optim);
        } catch (RuntimeException e) {
            if (belongsTo(model, previousOptimizerFile(file))) {
                return new Pair(file, previousOptimizerFile(file), epoch);
            }
            throw e;
        }
        if (belongsTo(model, optimMetadata)) {
            return new Pair(file, optim, epoch);
        }
        if (belongsTo(model, previousOptimizerFile(file))) {
            return new Pair(file, previousOptimizerFile(file), epoch);
        }
        int optimEpoch = epochOf(optim, optimMetadata);
        throw new IllegalArgumentException(file + " (epoch " + epoch + ") and " + optim + " (epoch " + optimEpoch + ") are"
                + " from different " + (epoch != optimEpoch ? "epochs" : "saves") + " (files copied from different runs?),"
                + " and no " + previousOptimizerFile(file) + " belongs to " + file + " either: resume from a matching pair");
    }

    private static boolean belongsTo(Map<String, String> model, Path optim) {
        if (!Files.exists(optim)) {
            return false;
        }
        try {
            return belongsTo(model, SafeTensors.loadMetadata(optim));
        } catch (RuntimeException e) {
            return false;
        }
    }

    /** The same save id, or, for files written before ids, the same epoch. */
    private static boolean belongsTo(Map<String, String> model, Map<String, String> optim) {
        String id = model.get(CHECKPOINT_KEY);
        return id != null ? id.equals(optim.get(CHECKPOINT_KEY))
                : optim.get(CHECKPOINT_KEY) == null && model.get(EPOCH_KEY) != null && model.get(EPOCH_KEY).equals(optim.get(EPOCH_KEY));
    }

    /**
     * The epochs done in the checkpoint, after checking that both files exist, are valid and belong together.
     *
     * @throws UncheckedIOException naming a missing or invalid file
     * @throws IllegalArgumentException when a file has no epoch or no optimizer file matches the model
     */
    static int epochsDone(Path file) {
        return pairOf(file).epochsDone();
    }

    private static int epochOf(Path file, Map<String, String> metadata) {
        String epoch = metadata.get(EPOCH_KEY);
        try {
            return Integer.parseInt(epoch);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(file + " has no '" + EPOCH_KEY + "' metadata (" + epoch + "), so it is not"
                    + " a checkpoint written by --save");
        }
    }

    /** Loads the model (strict) and the optimizer state that belongs to it from the checkpoint. */
    static void restore(Path file, Module model, Optimizer optimizer) {
        restore(file, model, optimizer, null);
    }

    /**
     * As {@link #restore(Path, Module, Optimizer)}, and the communication hook's state when the
     * checkpoint has one (entries {@link #COMM_HOOK_PREFIX}*); a checkpoint without them (written
     * with no hook, or before hooks existed) leaves hookState as it is (fresh). hookState may be null.
     */
    static void restore(Path file, Module model, Optimizer optimizer, CommHookState hookState) {
        Pair pair = pairOf(file);
        try (var scope = Tensors.scope()) { // frees the loaded copies
            model.loadStateDict(SafeTensors.loadFile(pair.model()));
            optimizer.loadStateDict(OptimizerStateDict.load(pair.optimizer()));
            if (hookState != null) {
                Map<String, Tensor> hook = new LinkedHashMap<>();
                SafeTensors.loadFile(pair.optimizer()).forEach((name, t) -> {
                    if (name.startsWith(COMM_HOOK_PREFIX)) {
                        hook.put(name.substring(COMM_HOOK_PREFIX.length()), t);
                    }
                });
                if (!hook.isEmpty()) {
                    hookState.loadStateDict(hook);
                }
            }
        }
    }
}
