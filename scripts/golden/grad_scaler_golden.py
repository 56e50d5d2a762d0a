#!/usr/bin/python3
"""Golden scale sequence for GradScaler (org.ddp4j.amp.GradScaler): the scale and growth tracker
after each update() for a fixed pattern of steps with and without an inf gradient, with
init_scale 2^16, growth_factor 2, backoff_factor 0.5, growth_interval 3.

torch 1.13's GradScaler needs CUDA, and its update op torch._amp_update_scale_ has no CPU kernel in
1.13 ("Could not run 'aten::_amp_update_scale_' with arguments from the 'CPU' backend"), so this
script applies that op's rule as its CUDA kernel (aten/src/ATen/native/cuda/AmpKernels.cu) states
it, in its dtypes (float32 scale, int32 tracker, the factors as doubles):
  found_inf: scale = scale * backoff_factor; tracker = 0
  else:      tracker + 1 == growth_interval ? (scale = float(scale * growth_factor) if finite; tracker = 0)
                                           : tracker += 1

Writes java/src/test/resources/golden/grad_scaler.json.
Run: /usr/bin/python3 scripts/golden/grad_scaler_golden.py
"""
import json
import os

import torch

OUT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "java", "src", "test",
                                    "resources", "golden", "grad_scaler.json"))
# 1: a step whose gradients hold an inf (or NaN) -> skipped; 0: a clean step.
PATTERN = [0, 0, 0, 1, 0, 1, 1, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0]


def main():
    scale = torch.tensor(2.0 ** 16, dtype=torch.float32)
    tracker = 0
    scales, trackers = [], []
    for inf in PATTERN:
        if inf:
            scale = torch.tensor(scale.item() * 0.5, dtype=torch.float32)
            tracker = 0
        elif tracker + 1 == 3:
            grown = torch.tensor(scale.item() * 2.0, dtype=torch.float32)
            if torch.isfinite(grown):
                scale = grown
            tracker = 0
        else:
            tracker += 1
        scales.append(scale.item())
        trackers.append(tracker)
    with open(OUT, "w") as f:
        json.dump({"init_scale": 2.0 ** 16, "growth_factor": 2.0, "backoff_factor": 0.5, "growth_interval": 3,
                   "pattern": PATTERN, "scales": scales, "growth_trackers": trackers}, f, indent=1)
        f.write("\n")
    print("wrote", OUT, scales)


if __name__ == "__main__":
    main()
