#!/usr/bin/python3
"""Golden values for Conv2d, BatchNorm2d and MaxPool2d, computed with PyTorch (Debian's
python3-torch) on the CPU in float32, with fixed seeds.

Writes java/src/test/resources/golden/{conv2d_s1_p2,conv2d_s2_p1,batch_norm2d,max_pool2d_k2,
max_pool2d_k3_s2_p1}.json. Each tensor entry is {"shape": [...], "data": [...flat, row-major...]}
(plus "dtype": "int64" for integer tensors); hyper-parameters are plain numbers. Gradients are
those of sum(out * grad_out) for a fixed random grad_out, i.e. out.backward(grad_out).

Run from anywhere:  /usr/bin/python3 scripts/golden/conv_golden.py
"""
import json
import os

import torch
import torch.nn.functional as F

OUT_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "java", "src", "test", "resources",
                       "golden")


def entry(t):
    t = t.detach()
    e = {"shape": list(t.shape), "data": t.reshape(-1).tolist()}
    if t.dtype == torch.int64:
        e["dtype"] = "int64"
    else:
        assert t.dtype == torch.float32, t.dtype
    return e


def write(name, values):
    path = os.path.normpath(os.path.join(OUT_DIR, name + ".json"))
    lines = []
    for key, value in values.items():
        v = entry(value) if isinstance(value, torch.Tensor) else value
        lines.append("  " + json.dumps(key) + ": " + json.dumps(v))
    with open(path, "w") as f:
        f.write("{\n" + ",\n".join(lines) + "\n}\n")
    print("wrote", path)


def leaf(t):
    return t.clone().requires_grad_(True)


def conv_case(name, seed, x_shape, w_shape, stride, padding):
    g = torch.Generator().manual_seed(seed)
    x = leaf(torch.randn(x_shape, generator=g))
    w = leaf(torch.randn(w_shape, generator=g) * 0.3)
    b = leaf(torch.randn(w_shape[0], generator=g))
    y = F.conv2d(x, w, b, stride=stride, padding=padding)
    gy = torch.randn(y.shape, generator=g)
    y.backward(gy)
    with torch.no_grad():
        y_nobias = F.conv2d(x, w, None, stride=stride, padding=padding)
    write(name, {"stride": stride, "padding": padding, "x": x, "weight": w, "bias": b, "y": y,
                 "y_nobias": y_nobias, "grad_y": gy, "grad_x": x.grad, "grad_weight": w.grad, "grad_bias": b.grad})


def batch_norm_case():
    g = torch.Generator().manual_seed(3)
    n, c, h, w = 4, 3, 5, 5
    # Channels with different means and spreads, one with a large mean.
    scale = torch.tensor([1.0, 2.5, 0.5]).view(1, c, 1, 1)
    shift = torch.tensor([0.0, -1.0, 20.0]).view(1, c, 1, 1)
    x0 = torch.randn(n, c, h, w, generator=g) * scale + shift
    gamma0 = torch.rand(c, generator=g) + 0.5
    beta0 = torch.randn(c, generator=g)
    rm0 = torch.randn(c, generator=g)
    rv0 = torch.rand(c, generator=g) + 0.5
    momentum, eps = 0.1, 1e-5
    values = {"momentum": momentum, "eps": eps, "x": x0, "weight": gamma0, "bias": beta0,
              "running_mean": rm0, "running_var": rv0}

    # Training mode: batch statistics, running statistics updated.
    bn = torch.nn.BatchNorm2d(c, eps=eps, momentum=momentum)
    with torch.no_grad():
        bn.weight.copy_(gamma0)
        bn.bias.copy_(beta0)
        bn.running_mean.copy_(rm0)
        bn.running_var.copy_(rv0)
    x = leaf(x0)
    y = bn(x)
    gy = torch.randn(y.shape, generator=g)
    y.backward(gy)
    values.update({"grad_y": gy, "y_train": y, "grad_x_train": x.grad, "grad_weight_train": bn.weight.grad,
                   "grad_bias_train": bn.bias.grad, "running_mean_after": bn.running_mean,
                   "running_var_after": bn.running_var,
                   "num_batches_tracked_after": bn.num_batches_tracked.reshape(())})

    # Eval mode: the initial running statistics normalise; gradients of the fixed affine map.
    bn_eval = torch.nn.BatchNorm2d(c, eps=eps, momentum=momentum)
    with torch.no_grad():
        bn_eval.weight.copy_(gamma0)
        bn_eval.bias.copy_(beta0)
        bn_eval.running_mean.copy_(rm0)
        bn_eval.running_var.copy_(rv0)
    bn_eval.eval()
    x = leaf(x0)
    y = bn_eval(x)
    y.backward(gy)
    values.update({"y_eval": y, "grad_x_eval": x.grad, "grad_weight_eval": bn_eval.weight.grad,
                   "grad_bias_eval": bn_eval.bias.grad})

    # Another momentum: two training steps from the initial running statistics.
    bn3 = torch.nn.BatchNorm2d(c, eps=eps, momentum=0.3)
    with torch.no_grad():
        bn3.running_mean.copy_(rm0)
        bn3.running_var.copy_(rv0)
        bn3(x0)
        bn3(x0 * 0.5 + 1)
    values.update({"momentum3": 0.3, "running_mean_after_two_steps_m3": bn3.running_mean,
                   "running_var_after_two_steps_m3": bn3.running_var})
    write("batch_norm2d", values)


def max_pool_case(name, seed, x_shape, kernel, stride, padding):
    g = torch.Generator().manual_seed(seed)
    x = leaf(torch.randn(x_shape, generator=g))
    y, idx = F.max_pool2d(x, kernel, stride=stride, padding=padding, return_indices=True)
    gy = torch.randn(y.shape, generator=g)
    y.backward(gy)
    write(name, {"kernel": kernel, "stride": stride, "padding": padding, "x": x, "y": y, "indices": idx,
                 "grad_y": gy, "grad_x": x.grad})


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    # The Fashion-MNIST net's first conv (1 -> 16, 5x5, pad 2) at a small size.
    conv_case("conv2d_s1_p2", 1, (2, 1, 8, 8), (4, 1, 5, 5), 1, 2)
    # Several input channels, 3x3, stride 2, pad 1, odd sizes (floor in the output size).
    conv_case("conv2d_s2_p1", 2, (2, 3, 7, 9), (5, 3, 3, 3), 2, 1)
    batch_norm_case()
    max_pool_case("max_pool2d_k2", 4, (2, 3, 9, 8), 2, 2, 0)
    max_pool_case("max_pool2d_k3_s2_p1", 5, (2, 3, 7, 7), 3, 2, 1)


if __name__ == "__main__":
    main()
