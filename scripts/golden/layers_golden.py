#!/usr/bin/python3
"""Golden values for the layers torchvision's ResNets need, made with PyTorch on the CPU in float32
with fixed seeds: AdaptiveAvgPool2d, AvgPool2d, MaxPool2d with dilation and ceil_mode, a small
residual block (a tensor used twice) and BatchNorm2d's options.

Writes java/src/test/resources/golden/adaptive_avg_pool2d.json (and the files listed in
scripts/golden/README.md) in the format of linear_loss_golden.py: tensors as {"shape", "data"},
hyper-parameters as plain numbers. Cases of one layer share a file, their keys prefixed by
"<case>.". Gradients are those of out.backward(grad_out) for a fixed random grad_out.

Run with Debian's python3-torch: /usr/bin/python3 scripts/golden/layers_golden.py
"""
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from linear_loss_golden import write  # noqa: E402  (same file format)


def leaf(t):
    return t.clone().requires_grad_(True)


# name -> (input shape, output size (h, w))
ADAPTIVE_CASES = {
    "global_7x7": ((2, 3, 7, 7), (1, 1)),       # ResNet's head: a mean over the plane
    "odd_7x9_to_3x4": ((2, 3, 7, 9), (3, 4)),   # windows of unequal size that overlap
    "even_8x8_to_2x2": ((2, 2, 8, 8), (2, 2)),  # windows that tile the plane exactly
    "up_5x4_to_7x6": ((1, 2, 5, 4), (7, 6)),    # more outputs than inputs: rows repeat
}


def adaptive_avg_pool_golden():
    g = torch.Generator().manual_seed(21)
    values = {}
    for name, (x_shape, size) in ADAPTIVE_CASES.items():
        x = leaf(torch.randn(x_shape, generator=g))
        y = F.adaptive_avg_pool2d(x, size)
        gy = torch.randn(y.shape, generator=g)
        y.backward(gy)
        values.update({f"{name}.out_h": size[0], f"{name}.out_w": size[1], f"{name}.x": x, f"{name}.y": y,
                       f"{name}.grad_y": gy, f"{name}.grad_x": x.grad})
    write("adaptive_avg_pool2d", values)


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    adaptive_avg_pool_golden()


if __name__ == "__main__":
    main()
