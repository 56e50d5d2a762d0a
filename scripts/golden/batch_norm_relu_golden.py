#!/usr/bin/python3
"""Golden values for the fused batch norm + ReLU that ddp4j's ResNet blocks use
(BatchNorm2dReluFunction, BatchNorm2d.forwardRelu): PyTorch's composition F.relu(bn(x)) and
F.relu(bn(x) + residual), in float32 on the CPU with fixed seeds.

Writes java/src/test/resources/golden/batch_norm2d_relu.json in the format of
linear_loss_golden.py. Cases "plain" (no residual) and "residual"; each has STEPS training steps
(a forward and a backward with a fixed random grad_y) and then one eval-mode forward without grad:
keys "<case>.<step>.x", ".residual", ".y", ".grad_y", ".grad_x", ".grad_residual", ".grad_weight",
".grad_bias", ".running_mean", ".running_var", and "<case>.weight", "<case>.bias". Planes of 7 x 9
(a vector tail) with a shift and scale per channel, so the ReLU cuts some channels mostly off.

Run with Debian's python3-torch: /usr/bin/python3 scripts/golden/batch_norm_relu_golden.py
"""
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from linear_loss_golden import write  # noqa: E402  (same file format)

STEPS = 2


def leaf(t):
    return t.clone().requires_grad_(True)


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    g = torch.Generator().manual_seed(26)
    n, c, h, w = 2, 4, 7, 9
    scale = torch.tensor([1.0, 3.0, 0.5, 2.0]).view(1, c, 1, 1)
    shift = torch.tensor([0.0, -2.0, 4.0, 1.0]).view(1, c, 1, 1)
    values = {"steps": STEPS}
    for name in ("plain", "residual"):
        bn = torch.nn.BatchNorm2d(c)
        with torch.no_grad():
            bn.weight.copy_(torch.rand(c, generator=g) + 0.5)
            bn.bias.copy_(torch.randn(c, generator=g) * 0.5)
        values[f"{name}.weight"] = bn.weight.detach().clone()
        values[f"{name}.bias"] = bn.bias.detach().clone()
        for step in range(STEPS + 1):
            key = f"{name}.{step}"
            x = leaf(torch.randn(n, c, h, w, generator=g) * scale + shift)
            r = leaf(torch.randn(n, c, h, w, generator=g)) if name == "residual" else None
            values[f"{key}.x"] = x
            if r is not None:
                values[f"{key}.residual"] = r
            if step == STEPS:
                bn.eval()
                with torch.no_grad():
                    values[f"{key}.y"] = F.relu(bn(x) + r if r is not None else bn(x))
                continue
            y = F.relu(bn(x) + r if r is not None else bn(x))
            gy = torch.randn(y.shape, generator=g)
            bn.weight.grad = None
            bn.bias.grad = None
            y.backward(gy)
            values.update({f"{key}.y": y, f"{key}.grad_y": gy, f"{key}.grad_x": x.grad,
                           f"{key}.grad_weight": bn.weight.grad, f"{key}.grad_bias": bn.bias.grad,
                           f"{key}.running_mean": bn.running_mean.clone(), f"{key}.running_var": bn.running_var.clone()})
            if r is not None:
                values[f"{key}.grad_residual"] = r.grad
    write("batch_norm2d_relu", values)


if __name__ == "__main__":
    main()
