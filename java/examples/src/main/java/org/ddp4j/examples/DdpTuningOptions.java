package org.ddp4j.examples;

import picocli.CommandLine.Option;

/**
 * The knobs DDP users tune, shared by the demos and ResNetSynthetic (a picocli mixin):
 * {@code --autocast}, {@code --sync-bn}, {@code --comm-hook} and {@code --print-model}.
 */
final class DdpTuningOptions {
    @Option(names = "--autocast", paramLabel = "none|bf16|fp16",
            description = "Forward and loss under Autocast (torch.autocast(device, dtype)): conv and linear multiply in"
                    + " bfloat16 / float16 with float32 accumulation; fp16 scales the loss with a GradScaler (default:"
                    + " ${DEFAULT-VALUE}). Evaluation stays float32.")
    AutocastChoice autocast = AutocastChoice.none;

    @Option(names = "--sync-bn",
            description = "Convert the model's BatchNorm2d layers to SyncBatchNorm before DDP (convertSyncBatchnorm):"
                    + " batch statistics over every rank's batch, on the CPU too.")
    boolean syncBn;

    @Option(names = "--comm-hook", paramLabel = "allreduce|bf16|fp16|powersgd[:RANK]",
            description = "A DDP communication hook (ddp.registerCommHook): bf16/fp16 halve the bytes of each bucket's"
                    + " all-reduce, powersgd:RANK sends rank-RANK factors instead of the gradient matrices, after plain"
                    + " all-reduces while it warms up (the demos: " + ConvNetDemo.POWER_SGD_START_ITERATION
                    + " iterations, ResNetSynthetic: its warm-up steps). Default: none (DDP's built-in all-reduce).")
    String commHook;

    @Option(names = "--print-model",
            description = "Rank 0 prints the model once before training, as print(model) does (the DDP wrapper included).")
    boolean printModel;

    /**
     * The hook to register, or null for none.
     *
     * @throws IllegalArgumentException naming the accepted values for a bad --comm-hook
     */
    CommHookChoice hook() {
        return commHook == null ? null : CommHookChoice.parse(commHook);
    }
}
