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


# name -> (input shape, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override)
AVG_CASES = {
    "k3_s2_p1": ((2, 3, 7, 7), 3, 2, 1, False, True, None),                  # ResNet-style, padding counted
    "k3_s2_p1_ceil_nopad": ((2, 2, 8, 9), 3, 2, 1, True, False, None),       # padding not counted, partial windows
    "k2_s2_ceil_odd": ((1, 2, 7, 5), 2, 2, 0, True, True, None),             # ceil adds a window past the input
    "k3_s3_p1_ceil_drop": ((1, 2, 8, 8), 3, 3, 1, True, False, None),        # ceil's last window would start in the right padding: dropped
    "k3_s1_p1_divisor4": ((2, 2, 5, 6), 3, 1, 1, False, True, 4),            # divisor_override
    "k4_s2_p2_ceil": ((1, 1, 5, 5), 4, 2, 2, True, True, None),              # windows clipped at the padded edge
}

# name -> (input shape, kernel, stride, padding, dilation, ceil_mode)
MAX_CASES = {
    "k3_s1_p1_d2": ((2, 2, 7, 8), 3, 1, 1, 2, False),        # dilation: taps skip a row/column
    "k3_s2_ceil": ((2, 2, 8, 8), 3, 2, 0, 1, True),          # ceil: a partial last window
    "k3_s2_p1_d2_ceil": ((1, 3, 9, 7), 3, 2, 1, 2, True),    # all options together
    "k2_s2_p1_ceil_drop": ((1, 2, 5, 5), 2, 2, 1, 1, True),  # ceil's last window would start in the right padding: dropped
    "k2_s2_ceil_odd": ((2, 3, 9, 7), 2, 2, 0, 1, True),      # the 2x2 case with a partial window (no fast path)
}


def avg_pool_golden():
    g = torch.Generator().manual_seed(22)
    values = {}
    for name, (x_shape, k, s, p, ceil, count_pad, divisor) in AVG_CASES.items():
        x = leaf(torch.randn(x_shape, generator=g))
        y = F.avg_pool2d(x, k, s, p, ceil_mode=ceil, count_include_pad=count_pad, divisor_override=divisor)
        gy = torch.randn(y.shape, generator=g)
        y.backward(gy)
        values.update({f"{name}.kernel": k, f"{name}.stride": s, f"{name}.padding": p,
                       f"{name}.ceil_mode": int(ceil), f"{name}.count_include_pad": int(count_pad),
                       f"{name}.divisor_override": divisor or 0, f"{name}.x": x, f"{name}.y": y,
                       f"{name}.grad_y": gy, f"{name}.grad_x": x.grad})
    write("avg_pool2d", values)


def max_pool_golden():
    g = torch.Generator().manual_seed(23)
    values = {}
    for name, (x_shape, k, s, p, d, ceil) in MAX_CASES.items():
        x = leaf(torch.randn(x_shape, generator=g))
        y, idx = F.max_pool2d(x, k, s, p, dilation=d, ceil_mode=ceil, return_indices=True)
        gy = torch.randn(y.shape, generator=g)
        y.backward(gy)
        values.update({f"{name}.kernel": k, f"{name}.stride": s, f"{name}.padding": p, f"{name}.dilation": d,
                       f"{name}.ceil_mode": int(ceil), f"{name}.x": x, f"{name}.y": y, f"{name}.indices": idx,
                       f"{name}.grad_y": gy, f"{name}.grad_x": x.grad})
    write("max_pool2d_options", values)


# name -> BatchNorm2d keyword arguments (num_features 3)
BN_CASES = {
    "no_affine": {"affine": False},
    "no_running_stats": {"track_running_stats": False},
    "cumulative": {"momentum": None},
    "eps_momentum": {"eps": 1e-3, "momentum": 0.3},
}
BN_STEPS = 3


def batch_norm_golden():
    """Each case: BN_STEPS training forwards (different batches) with a backward each, then one eval
    forward and backward; outputs, input and parameter gradients, buffers after every step and the
    state_dict's keys."""
    g = torch.Generator().manual_seed(24)
    n, c, h, w = 2, 3, 3, 5
    scale = torch.tensor([1.0, 2.5, 0.5]).view(1, c, 1, 1)
    shift = torch.tensor([0.0, -1.0, 5.0]).view(1, c, 1, 1)
    values = {"steps": BN_STEPS}
    for name, kwargs in BN_CASES.items():
        bn = torch.nn.BatchNorm2d(c, **kwargs)
        if bn.affine:
            with torch.no_grad():
                bn.weight.copy_(torch.rand(c, generator=g) + 0.5)
                bn.bias.copy_(torch.randn(c, generator=g))
            values[f"{name}.weight"] = bn.weight
            values[f"{name}.bias"] = bn.bias
        values[f"{name}.state_dict_keys"] = list(bn.state_dict().keys())
        values[f"{name}.repr"] = repr(bn)
        for step in range(BN_STEPS + 1):
            if step == BN_STEPS:
                bn.eval()
            x = leaf(torch.randn(n, c, h, w, generator=g) * scale + shift)
            y = bn(x)
            gy = torch.randn(y.shape, generator=g)
            if bn.affine:
                bn.weight.grad = None
                bn.bias.grad = None
            y.backward(gy)
            key = f"{name}.{step}"
            values.update({f"{key}.x": x, f"{key}.y": y, f"{key}.grad_y": gy, f"{key}.grad_x": x.grad})
            if bn.affine:
                values.update({f"{key}.grad_weight": bn.weight.grad, f"{key}.grad_bias": bn.bias.grad})
            if bn.track_running_stats:
                # Copies: the buffers change in place at the next step.
                values.update({f"{key}.running_mean": bn.running_mean.clone(), f"{key}.running_var": bn.running_var.clone(),
                               f"{key}.num_batches_tracked": int(bn.num_batches_tracked)})
    write("batch_norm2d_options", values)


class TinyResNet(torch.nn.Module):
    """A stem whose input feeds both a conv and an addition, a basic block with an identity shortcut
    (its input used twice), a downsampling block with a 1x1 conv shortcut, then torchvision's head."""

    def __init__(self):
        super().__init__()
        nn = torch.nn
        self.conv0 = nn.Conv2d(3, 3, 3, padding=1, bias=False)
        self.conv1 = nn.Conv2d(3, 3, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(3)
        self.conv2 = nn.Conv2d(3, 3, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(3)
        self.conv3 = nn.Conv2d(3, 4, 3, stride=2, padding=1, bias=False)
        self.bn3 = nn.BatchNorm2d(4)
        self.conv4 = nn.Conv2d(4, 4, 3, padding=1, bias=False)
        self.bn4 = nn.BatchNorm2d(4)
        self.down = nn.Conv2d(3, 4, 1, stride=2, bias=False)
        self.down_bn = nn.BatchNorm2d(4)
        self.fc = nn.Linear(4, 3)

    def forward(self, x):
        h = F.relu(self.conv0(x)) + x
        out = F.relu(self.bn1(self.conv1(h)))
        h = F.relu(self.bn2(self.conv2(out)) + h)
        out = F.relu(self.bn3(self.conv3(h)))
        h = F.relu(self.bn4(self.conv4(out)) + self.down_bn(self.down(h)))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(h, 1), 1))


def residual_golden():
    g = torch.Generator().manual_seed(25)
    model = TinyResNet()
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn(p.shape, generator=g) * 0.5)
    x = leaf(torch.randn(2, 3, 7, 7, generator=g))
    target = torch.tensor([2, 0])
    loss = F.cross_entropy(model(x), target)
    loss.backward()
    values = {"x": x, "target": target, "loss": loss.reshape(()), "grad_x": x.grad,
              "names": [name for name, _ in model.named_parameters()]}
    for name, p in model.named_parameters():
        values[name] = p
        values[name + ".grad"] = p.grad
    write("residual_block", values)


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    adaptive_avg_pool_golden()
    avg_pool_golden()
    max_pool_golden()
    batch_norm_golden()
    residual_golden()


if __name__ == "__main__":
    main()
