#!/usr/bin/python3
"""Golden values for autocast (ddp4j's org.ddp4j.amp.Autocast): forward and backward of the
Fashion-MNIST ConvNet (examples/ConvNet.java) and of a ResNet BasicBlock (vision/models/BasicBlock.java,
8 -> 8 channels, identity shortcut), both in training mode, from the same weights, in three modes:

  torch_bf16  PyTorch's own torch.autocast("cpu", torch.bfloat16): conv and linear in bf16, outputs bf16.
  emul_bf16   ddp4j's semantics emulated exactly: conv/linear operands (x, w; in the backward the
              incoming gradient and the saved x and w) rounded to bf16, products and sums in float32,
              outputs and gradients float32 (custom autograd Functions below).
  fp32        no autocast: the reference both bf16 results are measured against.
  emul_fp16   the same with float16. PyTorch 1.13's CPU autocast supports bfloat16 only (it warns and
              turns itself off for float16), so float16 has no torch.autocast golden: this emulation is it.

Writes java/src/test/resources/golden/autocast.safetensors: convnet.param.<name>, convnet.x,
convnet.y, convnet.<mode>.{out,loss,grad_x,grad.<name>}; block.param.<name>, block.x, block.gy
(the gradient fed to the block's output), block.<mode>.{out,grad_x,grad.<name>}.

Run: /usr/bin/python3 scripts/golden/autocast_golden.py
"""
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from safetensors_writer import save_safetensors  # noqa: E402

OUT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "java", "src", "test",
                                    "resources", "golden", "autocast.safetensors"))
LOW = {"bf16": torch.bfloat16, "fp16": torch.float16}


def rnd(t, dtype):
    return t.to(dtype).to(torch.float32)


class RoundedConv(torch.autograd.Function):
    """conv2d with ddp4j's autocast arithmetic: rounded operands, float32 accumulation and output."""

    @staticmethod
    def forward(ctx, x, w, b, stride, padding, dtype):
        ctx.save_for_backward(x, w)
        ctx.conf = (stride, padding, dtype, b is not None)
        return F.conv2d(rnd(x, dtype), rnd(w, dtype), b, stride, padding)

    @staticmethod
    def backward(ctx, gy):
        x, w = ctx.saved_tensors
        stride, padding, dtype, has_b = ctx.conf
        gyr, xr, wr = rnd(gy, dtype), rnd(x, dtype), rnd(w, dtype)
        gx = torch.nn.grad.conv2d_input(x.shape, wr, gyr, stride, padding)
        gw = torch.nn.grad.conv2d_weight(xr, w.shape, gyr, stride, padding)
        gb = gy.sum((0, 2, 3)) if has_b else None
        return gx, gw, gb, None, None, None


class RoundedLinear(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, w, b, dtype):
        ctx.save_for_backward(x, w)
        ctx.dtype = dtype
        return F.linear(rnd(x, dtype), rnd(w, dtype), b)

    @staticmethod
    def backward(ctx, gy):
        x, w = ctx.saved_tensors
        d = ctx.dtype
        gyr = rnd(gy, d)
        return gyr @ rnd(w, d), gyr.t() @ rnd(x, d), gy.sum(0), None


class Conv(nn.Conv2d):
    mode = None  # None: plain; else the dtype to emulate

    def forward(self, x):
        if Conv.mode is None:
            return super().forward(x)
        return RoundedConv.apply(x, self.weight, self.bias, self.stride, self.padding, Conv.mode)


class Lin(nn.Linear):
    def forward(self, x):
        if Conv.mode is None:
            return super().forward(x)
        return RoundedLinear.apply(x, self.weight, self.bias, Conv.mode)


class ConvNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer1 = nn.Sequential(Conv(1, 16, 5, 1, 2), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2, 2))
        self.layer2 = nn.Sequential(Conv(16, 32, 5, 1, 2), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2, 2))
        self.fc = Lin(7 * 7 * 32, 10)

    def forward(self, x):
        out = self.layer2(self.layer1(x))
        return self.fc(out.reshape(out.size(0), -1))


class BasicBlock(nn.Module):
    def __init__(self, planes):
        super().__init__()
        self.conv1 = Conv(planes, planes, 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU()
        self.conv2 = Conv(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)

    def forward(self, x):
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu(out + x)


def run(model, x, mode, loss_of):
    """(out, loss, grad_x, {name: grad}) of one forward and backward in mode."""
    model.zero_grad()
    xl = x.clone().requires_grad_(True)
    Conv.mode = LOW[mode[5:]] if mode.startswith("emul") else None  # fp32, torch_bf16: plain modules
    if mode == "torch_bf16":
        with torch.autocast("cpu", dtype=torch.bfloat16):
            out = model(xl)
    else:
        out = model(xl)
    Conv.mode = None
    out = out.float()
    loss = loss_of(out)
    loss.backward()
    return out, loss, xl.grad, {n: p.grad.clone() for n, p in model.named_parameters()}


def record(values, prefix, model, x, loss_of, with_loss):
    for mode in ("fp32", "torch_bf16", "emul_bf16", "emul_fp16"):
        out, loss, gx, grads = run(model, x, mode, loss_of)
        values[f"{prefix}.{mode}.out"] = out
        if with_loss:
            values[f"{prefix}.{mode}.loss"] = loss.reshape(1)
        values[f"{prefix}.{mode}.grad_x"] = gx
        for n, g in grads.items():
            values[f"{prefix}.{mode}.grad.{n}"] = g


def main():
    values = {}
    torch.manual_seed(20)
    net = ConvNet()
    for n, p in net.named_parameters():
        values["convnet.param." + n] = p.detach().clone()
    x = torch.rand(4, 1, 28, 28)
    y = torch.randint(0, 10, (4,))
    values["convnet.x"], values["convnet.y"] = x, y
    record(values, "convnet", net, x, lambda out: F.cross_entropy(out, y), True)

    g = torch.Generator().manual_seed(21)
    block = BasicBlock(8)
    with torch.no_grad():
        for p in block.parameters():
            p.copy_(torch.randn(p.shape, generator=g) * (0.2 if p.dim() == 4 else 1.0))
    for n, p in block.named_parameters():
        values["block.param." + n] = p.detach().clone()
    bx = torch.randn(2, 8, 12, 12, generator=g)
    gy = torch.randn(2, 8, 12, 12, generator=g)
    values["block.x"], values["block.gy"] = bx, gy
    record(values, "block", block, bx, lambda out: (out * gy).sum(), False)

    save_safetensors(values, OUT)
    print("wrote", OUT, os.path.getsize(OUT), "bytes")


if __name__ == "__main__":
    main()
