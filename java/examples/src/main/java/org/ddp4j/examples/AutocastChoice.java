package org.ddp4j.examples;

import org.ddp4j.amp.Autocast;
import org.ddp4j.amp.GradScaler;
import org.ddp4j.tensor.DType;
import org.ddp4j.tensor.Device;

/**
 * The demos' {@code --autocast none|bf16|fp16}: forward and loss under {@link Autocast} in that
 * dtype (conv and linear multiply in it, float32 accumulation), float16 with a {@link GradScaler}
 * (its range underflows gradients; bfloat16's does not).
 */
enum AutocastChoice {
    /** float32 throughout. */
    none(null),
    /** torch.autocast(device, torch.bfloat16). */
    bf16(DType.BFLOAT16),
    /** torch.autocast(device, torch.float16) with a GradScaler. */
    fp16(DType.FLOAT16);

    private final DType dtype;

    AutocastChoice(DType dtype) {
        this.dtype = dtype;
    }

    /** The scope to run forward and loss in (a disabled one for none). */
    Autocast scope(Device device) {
        return Autocast.enable(device, dtype == null ? DType.BFLOAT16 : dtype, dtype != null);
    }

    /** A GradScaler, enabled for fp16 only (disabled, it passes the loss and the step through). */
    GradScaler scaler() {
        return new GradScaler(new GradScaler.Options().enabled(this == fp16));
    }

    /** For header lines: the choice and, for bf16, the CPU kernel that multiplies (avx512bf16 or widen). */
    String describe() {
        return switch (this) {
            case none -> "none";
            case bf16 -> "bf16 kernel=" + Autocast.cpuKernel().settingValue();
            case fp16 -> "fp16 kernel=widen";
        };
    }
}
