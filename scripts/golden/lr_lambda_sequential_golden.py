#!/usr/bin/python3
"""Golden learning rates for ddp4j's LambdaLR and SequentialLR, made with PyTorch.

Writes java/src/test/resources/golden/lr_lambda_sequential.json in the format of linear_loss_golden.py:
for each case, `get_last_lr()` after construction and after each of its steps, one list per parameter
group ("<case>.lrs0", "<case>.lrs1"), the final last_epoch and each group's final lr. The optimizer is
SGD over two parameter groups, lr 0.1 and 0.03. The cases: nanoGPT's get_lr (linear warm-up, cosine
decay to min_lr, then constant) written as a LambdaLR factor; one lambda per group; warm-up then cosine
as SequentialLR(LinearLR, CosineAnnealingLR); three parts (LinearLR, StepLR, CosineAnnealingLR).

Run with Debian's python3-torch: /usr/bin/python3 scripts/golden/lr_lambda_sequential_golden.py
"""
import math
import os
import sys
import warnings

import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from linear_loss_golden import write  # noqa: E402  (same file format)

LRS = (0.1, 0.03)
WARMUP, DECAY, MIN_RATIO = 5, 25, 0.1


def nanogpt_factor(it):
    """nanoGPT's get_lr(it) / learning_rate, with min_lr = MIN_RATIO * learning_rate."""
    if it < WARMUP:
        return (it + 1) / (WARMUP + 1)
    if it > DECAY:
        return MIN_RATIO
    decay_ratio = (it - WARMUP) / (DECAY - WARMUP)
    coeff = 0.5 * (1.0 + math.cos(math.pi * decay_ratio))
    return MIN_RATIO + coeff * (1.0 - MIN_RATIO)


S = torch.optim.lr_scheduler
CASES = {
    "lambda_nanogpt": (lambda o: S.LambdaLR(o, nanogpt_factor), 30),
    "lambda_per_group": (lambda o: S.LambdaLR(o, [nanogpt_factor, lambda e: 0.95 ** e]), 30),
    "sequential_warmup_cosine": (lambda o: S.SequentialLR(o, [S.LinearLR(o, 0.01, 1.0, WARMUP),
                                                             S.CosineAnnealingLR(o, DECAY, eta_min=0.001)],
                                                         milestones=[WARMUP]), 30),
    "sequential_three": (lambda o: S.SequentialLR(o, [S.LinearLR(o, 0.1, 1.0, 3), S.StepLR(o, 3, 0.5),
                                                     S.CosineAnnealingLR(o, 6)], milestones=[4, 12]), 30),
}


def main():
    out = {"group_lrs": list(LRS), "warmup": WARMUP, "decay": DECAY, "min_ratio": MIN_RATIO}
    warnings.simplefilter("ignore")  # step(0) inside SequentialLR warns of the deprecated epoch argument
    for name, (make, steps) in CASES.items():
        w, b = nn.Parameter(torch.zeros(2)), nn.Parameter(torch.zeros(1))
        opt = torch.optim.SGD([{"params": [w]}, {"params": [b], "lr": LRS[1]}], lr=LRS[0])
        sched = make(opt)
        lrs = [list(sched.get_last_lr())]
        for _ in range(steps):
            opt.step()
            sched.step()
            lrs.append(list(sched.get_last_lr()))
        for g in range(len(LRS)):
            out[f"{name}.lrs{g}"] = [lr[g] for lr in lrs]
            out[f"{name}.optimizer_lr{g}"] = opt.param_groups[g]["lr"]
        out[f"{name}.last_epoch"] = sched.last_epoch
    write("lr_lambda_sequential", out)


if __name__ == "__main__":
    main()
