#!/usr/bin/python3
"""Golden values for ddp4j's linear, ReLU, MSE / cross-entropy losses and SGD, made with PyTorch.

Writes java/src/test/resources/golden/{linear,relu,mse_loss,cross_entropy,sgd}.json. Each tensor
entry is {"shape": [...], "data": [...flat, row-major...]} (float32 values, or "dtype": "int64");
hyper-parameters are plain numbers. Seeds are fixed, so a rerun reproduces the same files.

Run with Debian's python3-torch: /usr/bin/python3 scripts/golden/linear_loss_golden.py
"""
import json
import os

import torch
import torch.nn.functional as F

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "java", "src", "test", "resources",
                   "golden")


def entry(t):
    t = t.detach()
    e = {"shape": list(t.shape), "data": t.flatten().tolist()}
    if t.dtype == torch.int64:
        e["dtype"] = "int64"
    else:
        assert t.dtype == torch.float32, t.dtype
    return e


def write(name, entries):
    path = os.path.join(OUT, name + ".json")
    # One entry per line: compact, yet diffs stay readable.
    lines = [json.dumps(k) + ": " + json.dumps(entry(v) if isinstance(v, torch.Tensor) else v)
             for k, v in entries.items()]
    with open(path, "w") as f:
        f.write("{\n" + ",\n".join(lines) + "\n}\n")
    print("wrote", os.path.normpath(path))


def leaf(t):
    return t.clone().requires_grad_(True)


def linear_golden():
    g = torch.Generator().manual_seed(1)
    out = {}
    # A small case and a larger one (BLAS takes its blocked paths), each with and without bias.
    for tag, (n, i, o) in {"small": (4, 3, 2), "large": (17, 33, 9)}.items():
        x = torch.randn(n, i, generator=g)
        w = torch.randn(o, i, generator=g) * 0.3
        b = torch.randn(o, generator=g)
        gy = torch.randn(n, o, generator=g)
        out.update({f"{tag}.x": x, f"{tag}.w": w, f"{tag}.b": b, f"{tag}.gy": gy})
        xl, wl, bl = leaf(x), leaf(w), leaf(b)
        y = F.linear(xl, wl, bl)
        y.backward(gy)
        out.update({f"{tag}.y": y, f"{tag}.gx": xl.grad, f"{tag}.gw": wl.grad, f"{tag}.gb": bl.grad})
        xl, wl = leaf(x), leaf(w)
        y = F.linear(xl, wl)
        y.backward(gy)
        out.update({f"{tag}.y_nobias": y, f"{tag}.gx_nobias": xl.grad, f"{tag}.gw_nobias": wl.grad})
    write("linear", out)


def relu_golden():
    g = torch.Generator().manual_seed(2)
    x = torch.randn(3, 5, generator=g)
    x[0, 0] = 0.0  # the gradient at exactly 0 is 0
    x[2, 4] = -0.0
    gy = torch.randn(3, 5, generator=g)
    xl = leaf(x)
    y = F.relu(xl)
    y.backward(gy)
    write("relu", {"x": x, "gy": gy, "y": y, "gx": xl.grad})


def mse_golden():
    g = torch.Generator().manual_seed(3)
    x = torch.randn(4, 5, generator=g)
    t = torch.randn(4, 5, generator=g)
    xl, tl = leaf(x), leaf(t)
    loss = F.mse_loss(xl, tl)
    loss.backward()
    write("mse_loss", {"input": x, "target": t, "loss": loss, "ginput": xl.grad, "gtarget": tl.grad})


def cross_entropy_golden():
    g = torch.Generator().manual_seed(4)
    logits = torch.randn(6, 5, generator=g) * 2
    # Rows with huge logits: the naive softmax would overflow to inf / nan.
    logits[3] = torch.tensor([1000.0, -1000.0, 0.0, 999.0, -5.0])
    logits[4] = torch.tensor([-1000.0, 1000.0, -1000.0, 1000.0, 0.0])
    logits[5] = torch.tensor([1e4, -1e4, 0.0, 1.0, 2.0])
    target = torch.tensor([0, 4, 2, 3, 0, 1], dtype=torch.int64)
    ll = leaf(logits)
    loss = F.cross_entropy(ll, target)
    loss.backward()
    out = {"logits": logits, "target": target, "loss": loss, "glogits": ll.grad}
    # A non-unit upstream gradient (the loss scaled by 2.5).
    ll = leaf(logits)
    F.cross_entropy(ll, target).backward(torch.tensor(2.5))
    out.update({"gout_scaled": 2.5, "glogits_scaled": ll.grad})
    write("cross_entropy", out)


def sgd_golden():
    g = torch.Generator().manual_seed(5)
    param = torch.randn(2, 3, generator=g)
    grads = torch.randn(3, 2, 3, generator=g)  # one gradient per step
    variants = {
        "plain": dict(lr=0.1, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False),
        "momentum": dict(lr=0.1, momentum=0.9, dampening=0.0, weight_decay=0.0, nesterov=False),
        "dampening_wd": dict(lr=0.1, momentum=0.9, dampening=0.1, weight_decay=0.01, nesterov=False),
        "nesterov": dict(lr=0.1, momentum=0.9, dampening=0.0, weight_decay=0.0, nesterov=True),
    }
    out = {"param": param, "grads": grads}
    for name, opts in variants.items():
        p = leaf(param)
        opt = torch.optim.SGD([p], **opts)
        after = []
        for k in range(grads.shape[0]):
            p.grad = grads[k].clone()
            opt.step()
            after.append(p.detach().clone())
        for key, value in opts.items():
            out[f"{name}.{key}"] = float(value)  # nesterov as 0.0 / 1.0
        out[f"{name}.params_after"] = torch.stack(after)  # [steps, 2, 3]: the parameter after each step
    write("sgd", out)


if __name__ == "__main__":
    torch.manual_seed(0)
    linear_golden()
    relu_golden()
    mse_golden()
    cross_entropy_golden()
    sgd_golden()
