package org.ddp4j.examples;

import org.ddp4j.optim.CosineAnnealingLR;
import org.ddp4j.optim.LRScheduler;
import org.ddp4j.optim.OneCycleLR;
import org.ddp4j.optim.Optimizer;
import org.ddp4j.optim.StepLR;

/** The demos' {@code --scheduler}: stepped once per epoch as PyTorch's examples do, or once per batch (onecycle). */
enum SchedulerChoice {
    /** A constant lr. */
    none,
    /** StepLR(step_size=1, gamma): the lr times gamma after every epoch (PyTorch's MNIST example, gamma 0.7). */
    step,
    /** CosineAnnealingLR(T_max=epochs): half a cosine from the lr down to 0 over the run. */
    cosine,
    /**
     * OneCycleLR(max_lr=lr, total_steps=epochs × batches), stepped after every batch: the lr rises from lr/25 to lr
     * over the first 30% of the steps and falls to lr/25e4 by the last, the momentum moves 0.95 → 0.85 → 0.95.
     */
    onecycle;

    /** Whether the schedule steps after every batch rather than after every epoch. */
    boolean perBatch() {
        return this == onecycle;
    }

    /** The scheduler over optimizer (null for none); batchesPerEpoch counts only for a per-batch schedule. */
    LRScheduler create(Optimizer optimizer, int epochs, int batchesPerEpoch, double gamma) {
        return switch (this) {
            case none -> null;
            case step -> new StepLR(optimizer, 1, gamma);
            case cosine -> new CosineAnnealingLR(optimizer, epochs);
            case onecycle -> new OneCycleLR(optimizer, optimizer.paramGroups().get(0).lr(), epochs * batchesPerEpoch);
        };
    }
}
