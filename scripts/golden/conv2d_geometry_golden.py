#!/usr/bin/python3
"""Golden values for Conv2d at the geometries torchvision's ResNets, ResNeXts and MobileNets use:
1x1 at stride 1 and 2, 3x3 stride 2, the 7x7 stride-2 stem without bias, grouped, depthwise and
dilated convolutions, and all of groups, dilation and stride at once. Computed with PyTorch
(Debian's python3-torch) on the CPU, with fixed seeds: float32 inputs, references computed in
float64 from the inputs as stored.

Writes java/src/test/resources/golden/conv2d_geometry.json: "cases" lists the case names; each
case's entries are keyed "<case>/<name>": stride, padding, dilation, groups (numbers), x, weight,
bias (absent for bias-free cases), y, grad_y, grad_x, grad_weight, grad_bias (tensors as
{"shape": [...], "data": [...flat, row-major...]}, values to 7 significant digits), and repr (how
torch.nn.Conv2d with these arguments prints). Gradients are those of y.backward(grad_y).

Run from anywhere:  /usr/bin/python3 scripts/golden/conv2d_geometry_golden.py
"""
import json
import os

import torch
import torch.nn.functional as F

OUT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "java", "src", "test",
                                    "resources", "golden", "conv2d_geometry.json"))

# name, x shape, weight shape, stride, padding, dilation, groups, bias
CASES = [
    ("pointwise_s1", (2, 8, 16, 16), (6, 8, 1, 1), 1, 0, 1, 1, True),
    ("pointwise_s2", (2, 8, 9, 9), (6, 8, 1, 1), 2, 0, 1, 1, True),
    ("k3_s2_p1", (2, 4, 9, 9), (6, 4, 3, 3), 2, 1, 1, 1, True),
    ("stem_k7_s2_p3_nobias", (2, 3, 24, 24), (4, 3, 7, 7), 2, 3, 1, 1, False),
    ("groups2", (2, 4, 6, 6), (6, 2, 3, 3), 1, 1, 1, 2, True),
    ("depthwise", (2, 6, 7, 7), (6, 1, 3, 3), 1, 1, 1, 6, True),
    ("dilation2", (2, 3, 9, 9), (4, 3, 3, 3), 1, 2, 2, 1, True),
    ("groups2_dilation2_s2", (2, 4, 11, 10), (8, 2, 3, 3), 2, 2, 2, 2, True),
]


def digits7(v):
    return float("%.7g" % v)


def stored(t):
    """A float32 tensor as the golden file stores it (7 digits), in float64 for the reference."""
    return torch.tensor([digits7(v) for v in t.reshape(-1).tolist()], dtype=torch.float32).reshape(t.shape).double()


def entry(t):
    t = t.detach().float()
    return {"shape": list(t.shape), "data": [digits7(v) for v in t.reshape(-1).tolist()]}


def main():
    torch.set_num_threads(1)
    values = {"cases": [c[0] for c in CASES]}
    for seed, (name, xs, ws, stride, padding, dilation, groups, has_bias) in enumerate(CASES, start=11):
        g = torch.Generator().manual_seed(seed)
        # float32 inputs as stored (7 digits), the convolution in float64: the reference is then
        # exact to float32 rounding (PyTorch's own float32 weight gradient of the stem is 1.5e-5 off).
        x = stored(torch.randn(xs, generator=g)).requires_grad_(True)
        w = stored(torch.randn(ws, generator=g) * 0.3).requires_grad_(True)
        b = stored(torch.randn(ws[0], generator=g)).requires_grad_(True) if has_bias else None
        y = F.conv2d(x, w, b, stride=stride, padding=padding, dilation=dilation, groups=groups)
        gy = stored(torch.randn(y.shape, generator=g))
        y.backward(gy)
        case = {"stride": stride, "padding": padding, "dilation": dilation, "groups": groups, "x": entry(x),
                "weight": entry(w), "y": entry(y), "grad_y": entry(gy), "grad_x": entry(x.grad),
                "grad_weight": entry(w.grad)}
        # How torch.nn.Conv2d with these arguments prints (its extra_repr).
        case["repr"] = str(torch.nn.Conv2d(xs[1], ws[0], ws[2], stride=stride, padding=padding, dilation=dilation,
                                           groups=groups, bias=has_bias))
        if has_bias:
            case.update({"bias": entry(b), "grad_bias": entry(b.grad)})
        for key, value in case.items():
            values[name + "/" + key] = value
    with open(OUT, "w") as f:
        f.write("{\n" + ",\n".join("  " + json.dumps(k) + ": " + json.dumps(v) for k, v in values.items()) + "\n}\n")
    print("wrote", OUT)


if __name__ == "__main__":
    main()
