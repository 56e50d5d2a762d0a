package org.ddp4j.examples;

import org.ddp4j.optim.CosineAnnealingLR;
import org.ddp4j.optim.LRScheduler;
import org.ddp4j.optim.Optimizer;
import org.ddp4j.optim.StepLR;

/** The demos' {@code --scheduler}, stepped once per epoch as PyTorch's examples do. */
enum SchedulerChoice {
    /** A constant lr. */
    none,
    /** StepLR(step_size=1, gamma): the lr times gamma after every epoch (PyTorch's MNIST example, gamma 0.7). */
    step,
    /** CosineAnnealingLR(T_max=epochs): half a cosine from the lr down to 0 over the run. */
    cosine;

    /** The scheduler over optimizer (null for none). */
    LRScheduler create(Optimizer optimizer, int epochs, double gamma) {
        return switch (this) {
            case none -> null;
            case step -> new StepLR(optimizer, 1, gamma);
            case cosine -> new CosineAnnealingLR(optimizer, epochs);
        };
    }
}
