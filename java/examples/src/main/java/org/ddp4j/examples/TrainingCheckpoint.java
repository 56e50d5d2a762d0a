package org.ddp4j.examples;

import java.nio.file.Path;
import org.ddp4j.amp.GradScaler;
import org.ddp4j.distributed.algorithms.ddpcommhooks.CommHookState;
import org.ddp4j.nn.Module;
import org.ddp4j.optim.LRScheduler;
import org.ddp4j.optim.Optimizer;
import org.ddp4j.serialization.Checkpoint;
import org.ddp4j.tensor.Generator;

/**
 * The demos' {@code --save FILE} / {@code --resume FILE}: one {@link Checkpoint} file (atomic: a
 * failed or killed save leaves the previous one whole) with the entries {@code model} (the bare
 * model's state dict, PyTorch's names), {@code optimizer}, {@code scheduler} (when the run has
 * one), {@code epoch} (epochs done), {@code rng} (the model's generator, which draws the Dropout
 * masks, so a resumed run draws what an uninterrupted one would) and {@code comm_hook} (a DDP
 * communication hook's state, e.g. PowerSGD's error feedback, when it has one) and {@code grad_scaler}
 * (fp16's GradScaler: its scale and growth tracker).
 */
final class TrainingCheckpoint {
    static final String MODEL = "model";
    static final String OPTIMIZER = "optimizer";
    static final String SCHEDULER = "scheduler";
    static final String EPOCH = "epoch";
    static final String RNG = "rng";
    static final String COMM_HOOK = "comm_hook";
    static final String GRAD_SCALER = "grad_scaler";

    private TrainingCheckpoint() {}

    /**
     * What a run saves and restores: its model, optimizer, schedule (or null), generator, hook state
     * (or null) and fp16's GradScaler (or null).
     */
    record Run(Module model, Optimizer optimizer, LRScheduler scheduler, Generator generator, CommHookState hook,
            GradScaler scaler) {
        /** A run without a GradScaler. */
        Run(Module model, Optimizer optimizer, LRScheduler scheduler, Generator generator, CommHookState hook) {
            this(model, optimizer, scheduler, generator, hook, null);
        }
    }

    /**
     * Reads a checkpoint for {@code --resume} and checks that it is one the demos wrote.
     *
     * @throws java.io.UncheckedIOException naming a missing or damaged file
     * @throws IllegalArgumentException naming the file when it is not a demo checkpoint (e.g. a bare state dict)
     */
    static Checkpoint read(Path file) {
        Checkpoint c = Checkpoint.load(file);
        for (String key : new String[] {MODEL, OPTIMIZER, EPOCH, RNG}) {
            if (!c.has(key)) {
                throw new IllegalArgumentException(file + " has no '" + key + "' entry, so it is not a checkpoint written"
                        + " by --save (it has " + c.keys() + ")");
            }
        }
        return c;
    }

    /** Epochs done when the checkpoint was written. */
    static int epochsDone(Checkpoint c) {
        return c.getInt(EPOCH);
    }

    /**
     * Writes the run's state after {@code epochsDone} epochs.
     *
     * @throws java.io.UncheckedIOException (or IllegalStateException) saying that the save failed,
     *     why, and that the previous checkpoint (its epoch) is intact and how to resume it
     */
    static void save(Path file, Run run, int epochsDone) {
        try {
            write(file, run, epochsDone);
        } catch (java.io.UncheckedIOException e) {
            throw new java.io.UncheckedIOException(failedSave(file, epochsDone, e), e.getCause());
        } catch (RuntimeException e) {
            throw new IllegalStateException(failedSave(file, epochsDone, e), e);
        }
    }

    /** Why the save failed, and what of the previous checkpoint is left: it is whole, since only a rename replaces it. */
    private static String failedSave(Path file, int epochsDone, RuntimeException e) {
        String previous;
        try (var scope = org.ddp4j.tensor.Tensors.scope()) {
            previous = java.nio.file.Files.exists(file)
                    ? "the previous checkpoint (epoch " + epochsDone(read(file)) + ") is intact: --resume " + file
                            + " restores it"
                    : "there was no checkpoint at " + file + " before, so none was lost";
        } catch (RuntimeException unreadable) {
            previous = file + " held no resumable checkpoint before this save either (" + unreadable.getMessage() + ")";
        }
        return "cannot save the checkpoint of epoch " + epochsDone + " to " + file + ": " + e.getMessage() + "; " + previous;
    }

    private static void write(Path file, Run run, int epochsDone) {
        Checkpoint c = new Checkpoint().put(MODEL, run.model()).put(OPTIMIZER, run.optimizer());
        if (run.scheduler() != null) {
            c.put(SCHEDULER, run.scheduler());
        }
        c.put(EPOCH, epochsDone).put(RNG, run.generator());
        if (run.hook() != null) {
            c.put(COMM_HOOK, run.hook().stateDict());
        }
        if (run.scaler() != null) {
            c.put(GRAD_SCALER, scalerState(run.scaler()));
        }
        c.save(file);
    }

    /**
     * Restores the run from a checkpoint that {@link #read} accepted.
     *
     * @throws IllegalArgumentException when the checkpoint and the run disagree: another model or
     *     optimizer, a schedule in one and not the other, a hook state in one and not the other
     */
    static void restore(Path file, Checkpoint c, Run run) {
        c.restore(MODEL, run.model());
        c.restore(OPTIMIZER, run.optimizer());
        if ((run.scheduler() != null) != c.has(SCHEDULER)) {
            throw new IllegalArgumentException(file + (c.has(SCHEDULER) ? " holds a schedule's state and this run has no"
                    + " --scheduler" : " holds no schedule's state and this run has a --scheduler") + ": resume with the"
                    + " --scheduler of the run that saved it");
        }
        if (run.scheduler() != null) {
            c.restore(SCHEDULER, run.scheduler());
        }
        c.restore(RNG, run.generator());
        if ((run.hook() != null) != c.has(COMM_HOOK)) {
            throw new IllegalArgumentException(file + (c.has(COMM_HOOK) ? " holds a communication hook's state and this run"
                    + " has none (--comm-hook powersgd?)" : " holds no communication hook's state and this run's hook has"
                    + " one") + ": resume with the --comm-hook of the run that saved it");
        }
        if (run.hook() != null) {
            run.hook().loadStateDict(c.tensors(COMM_HOOK));
        }
        if (run.scaler() != null && c.has(GRAD_SCALER)) { // a float32 run's checkpoint resumed under fp16 starts a scale
            c.restore(GRAD_SCALER, scalerState(run.scaler()));
        }
    }

    /** The scaler's state dict (scale, growth tracker, factors) as a checkpoint entry. */
    private static Checkpoint.Stateful scalerState(GradScaler scaler) {
        return new Checkpoint.Stateful() {
            @Override
            public java.util.Map<String, org.ddp4j.tensor.Tensor> stateTensors() {
                return java.util.Map.of();
            }

            @Override
            public java.util.Map<String, Object> stateValues() {
                return scaler.stateDict();
            }

            @Override
            public void loadState(java.util.Map<String, org.ddp4j.tensor.Tensor> tensors, java.util.Map<String, Object> values) {
                scaler.loadStateDict(values);
            }
        };
    }
}
