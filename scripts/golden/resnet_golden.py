#!/usr/bin/python3
"""Golden values for org.ddp4j.vision.models.ResNet against torchvision (Debian's python3-torchvision
0.14 on python3-torch 1.13, float32, CPU).

No weights are committed: every parameter and buffer is overwritten with a formula that the Java
test (FormulaWeights.java) reproduces bit for bit, using integer arithmetic and IEEE double
operations only:
  u(i, t)  = lowbias32 hash of the flat index i and the tensor's state_dict position t, as
             (h >> 8) / 2^23 - 1, exactly representable, in [-1, 1)
  value    = float32(offset + scale * u), (offset, scale) by kind of tensor (see rule()):
             conv weights scale sqrt(6 / fan_in) (variance 2 / fan_in, so activations stay sane),
             fc.weight sqrt(3 / fan_in), biases 0.1, BN weight 1 ± 0.25 (the block's last BN 0.2 ± 0.05),
             running_var 1 ± 0.5;
             num_batches_tracked = t.
The input is the same formula with t = 1000 (offset 0, scale 1); targets are (3 n + 1) mod classes.

Writes to java/src/test/resources/golden/:
- resnet_structure.json: for resnet18/34/50/101/152 (1000 classes) and the CIFAR-stem resnet18 with
  1 input channel: the state_dict keys in order with shape and dtype, the named_parameters order
  and the parameter count.
- resnet18.json (2 x 3 x 64 x 64), resnet50.json (4 x 3 x 64 x 64: with batch 2 its train-mode gradients are
  ill-conditioned, float32 PyTorch itself is 2% off float64 there), resnet18_cifar.json (the CIFAR
  stem: conv1 3x3 stride 1 padding 1 and maxpool = Identity, 1 channel, 2 x 1 x 28 x 28), 10
  classes each: the keys (state_dict), the input's shape and first values, the target, then in eval mode and afterwards in
  train mode (batch statistics, entries eval.* and train.*): the logits, the cross-entropy loss, and
  for every parameter's gradient its sum, the sum of its absolute values, its first 8 values and
  their spread (how far float32 runs lie from a float64 copy of the model, see run());
  after the train forward a few BN buffers (after_train.*).

  /usr/bin/python3 scripts/golden/resnet_golden.py

Also writes torchvision's freshly initialised weights as a safetensors file (Debian's torch 1.13 has
no safetensors package; safetensors_writer.save_safetensors writes the same format), e.g. for
ResNet.loadTorchvisionWeights or ResNetSynthetic --weights:

  /usr/bin/python3 scripts/golden/resnet_golden.py --export resnet50 /tmp/resnet50.safetensors [--num-classes 1000]
  (or --weights IMAGENET1K_V2 for torchvision's pretrained ones, which it downloads)
"""
import argparse
import copy
import json
import math
import os

import numpy as np
import torch
import torch.nn as nn
import torchvision

from safetensors_writer import save_safetensors

GOLDEN = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "java", "src", "test",
                                       "resources", "golden"))
M = np.uint64(0xFFFFFFFF)
INPUT_TENSOR = 1000
HEAD = 8
# run(): float32 runs with noise on every ReLU input, which sample how far rounding can move a gradient
PROBES = 6
PROBE_NOISE = 2e-6


def uniform(n, t):
    """u(i, t) for i in [0, n): the lowbias32 hash (Chris Wellons) of i * golden ratio + (t + 1) * 0x85EBCA77."""
    i = np.arange(n, dtype=np.uint64)
    h = (i * np.uint64(0x9E3779B1) + np.uint64(((t + 1) * 0x85EBCA77) & 0xFFFFFFFF)) & M
    h ^= h >> np.uint64(16)
    h = (h * np.uint64(0x7FEB352D)) & M
    h ^= h >> np.uint64(15)
    h = (h * np.uint64(0x846CA68B)) & M
    h ^= h >> np.uint64(16)
    return (h >> np.uint64(8)).astype(np.float64) / 8388608.0 - 1.0


def rule(name, shape, last_bn):
    """(offset, scale) of the formula for a state_dict entry; last_bn names the residual branch's last batch
    norm (bn2 in BasicBlock, bn3 in Bottleneck), whose small weight keeps eval-mode activations from growing
    block after block (eval mode does not renormalise them)."""
    if len(shape) == 4:
        return 0.0, math.sqrt(6.0 / (shape[1] * shape[2] * shape[3]))
    if name == "fc.weight":
        return 0.0, math.sqrt(3.0 / shape[1])
    if name.endswith("running_var"):
        return 1.0, 0.5
    if name.endswith("running_mean") or name.endswith("bias"):
        return 0.0, 0.1
    if name.startswith("layer") and name.endswith("." + last_bn + ".weight"):
        return 0.2, 0.05
    if name.endswith("weight"):
        return 1.0, 0.25
    raise ValueError("no formula for " + name)


def formula(shape, t, offset, scale):
    n = int(np.prod(shape)) if len(shape) else 1
    return torch.from_numpy((offset + scale * uniform(n, t)).astype(np.float32).reshape(shape))


def formula_state(model):
    state = {}
    last_bn = "bn3" if any(".bn3." in k for k in model.state_dict()) else "bn2"
    for t, (name, v) in enumerate(model.state_dict().items()):
        if v.dtype == torch.int64:
            state[name] = torch.tensor(t, dtype=torch.int64)
        else:
            state[name] = formula(list(v.shape), t, *rule(name, list(v.shape), last_bn))
    return state


def cifar_stem(model, in_channels):
    """The common CIFAR variant, as ddp4j's ResNet.Options.cifarStem: conv1 3x3 stride 1 padding 1, no max pool."""
    model.conv1 = nn.Conv2d(in_channels, 64, kernel_size=3, stride=1, padding=1, bias=False)
    model.maxpool = nn.Identity()
    return model


def entry(t):
    """A tensor as the Java tests' Golden reads it: {"shape", "data"} (and "dtype": "int64" for int64)."""
    t = t.detach()
    if t.dtype == torch.int64:
        return {"shape": list(t.shape), "dtype": "int64", "data": t.reshape(-1).tolist()}
    # 9 significant digits round-trip a float32.
    return {"shape": list(t.shape), "data": [float("%.9g" % v) for v in t.reshape(-1).tolist()]}


def keys(model):
    return [[k, list(v.shape), str(v.dtype).replace("torch.", "")] for k, v in model.state_dict().items()]


def structure():
    """Entries <model>.state_dict ([name, shape, dtype] in order), <model>.parameters (named_parameters order)
    and <model>.param_count."""
    models = {name: getattr(torchvision.models, name)() for name in
              ["resnet18", "resnet34", "resnet50", "resnet101", "resnet152"]}
    models["resnet18_cifar_1ch_10"] = cifar_stem(torchvision.models.resnet18(num_classes=10), 1)
    out = {}
    for name, m in models.items():
        out[name + ".state_dict"] = keys(m)
        out[name + ".parameters"] = [k for k, _ in m.named_parameters()]
        out[name + ".param_count"] = sum(p.numel() for p in m.parameters())
    return out


def gradients(model, x, y):
    """One forward and backward: (logits, loss, {name: gradient})."""
    logits = model(x)
    loss = nn.functional.cross_entropy(logits, y)
    loss.backward()
    return logits, loss, {name: p.grad.detach() for name, p in model.named_parameters()}


def run(model, exact, x, y, mode, out):
    """One forward and backward in float32 (model) and in float64 (exact, the same weights); entries named
    <mode>.logits, <mode>.loss, <mode>.grad_sum.<param> (the sum of the float32 gradient),
    <mode>.grad_abs_sum.<param> (of its absolute values), <mode>.grad_head.<param> (its first values), and how
    far float32 results can lie from the exact ones: <mode>.grad_spread.<param> = [head, sum, abs sum], the
    largest distance from the float64 values of the head (any element), the sum and the abs sum over this
    float32 run and PROBES float32 runs whose ReLU inputs carry noise of PROBE_NOISE times their standard
    deviation. Float32 rounding, whose order differs between libraries and CPUs, moves values by about that
    much, and a ReLU input of 1e-6 whose sign flips passes or blocks a whole gradient element: in train mode
    every gradient upstream of it then moves by far more than 1e-4 of a value. The probes sample such flips."""
    probes = [copy.deepcopy(model) for _ in range(PROBES)]
    logits, loss, grads = gradients(model, x, y)
    _, _, exact_grads = gradients(exact, x.double(), y)
    runs = [grads]
    for k, probe in enumerate(probes):
        generator = torch.Generator().manual_seed(k)

        def jitter(module, inputs):
            v = inputs[0]
            return (v + PROBE_NOISE * v.std() * torch.randn(v.shape, generator=generator),)

        for module in probe.modules():
            if isinstance(module, nn.ReLU):
                module.register_forward_pre_hook(jitter)
        runs.append(gradients(probe, x, y)[2])
    out[mode + ".logits"] = entry(logits)
    out[mode + ".loss"] = loss.item()
    for name, g in grads.items():
        e = exact_grads[name]
        out[mode + ".grad_sum." + name] = g.double().sum().item()
        out[mode + ".grad_abs_sum." + name] = g.double().abs().sum().item()
        out[mode + ".grad_head." + name] = entry(g.reshape(-1)[:HEAD])
        spread = [0.0, 0.0, 0.0]
        for r in runs:
            d = r[name].double()
            spread[0] = max(spread[0], (d.reshape(-1)[:HEAD] - e.reshape(-1)[:HEAD]).abs().max().item())
            spread[1] = max(spread[1], abs(d.sum().item() - e.sum().item()))
            spread[2] = max(spread[2], abs(d.abs().sum().item() - e.abs().sum().item()))
        out[mode + ".grad_spread." + name] = spread


def golden(model, batch, channels, size):
    model.load_state_dict(formula_state(model), strict=True)
    x = formula([batch, channels, size, size], INPUT_TENSOR, 0.0, 1.0)
    classes = model.fc.out_features
    y = torch.tensor([(3 * n + 1) % classes for n in range(batch)], dtype=torch.int64)
    # The input's first values only: the Java test checks that it reproduces the formula, then uses its own.
    out = {"state_dict": keys(model), "input_shape": list(x.shape), "input_head": entry(x.reshape(-1)[:256]),
           "target": entry(y)}
    exact = copy.deepcopy(model).double()
    model.eval()
    exact.eval()
    run(model, exact, x, y, "eval", out)
    model.zero_grad(set_to_none=True)
    exact.zero_grad(set_to_none=True)
    model.train()
    exact.train()
    run(model, exact, x, y, "train", out)
    state = model.state_dict()
    for k in ["bn1.running_mean", "bn1.running_var", "layer2.0.downsample.1.running_mean",
              "layer2.0.downsample.1.running_var", "bn1.num_batches_tracked"]:
        out["after_train." + k] = entry(state[k])
    return out


def write(name, value):
    path = os.path.join(GOLDEN, name)
    with open(path, "w") as f:
        json.dump(value, f, separators=(",", ":"))
        f.write("\n")
    print("wrote", path, os.path.getsize(path), "bytes")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--export", nargs=2, metavar=("MODEL", "FILE"),
                        help="write torchvision's freshly initialised MODEL state_dict to FILE (safetensors)")
    parser.add_argument("--num-classes", type=int, default=1000)
    parser.add_argument("--weights", help="with --export: torchvision's pretrained weights, e.g. IMAGENET1K_V2 (downloads them)")
    args = parser.parse_args()
    torch.manual_seed(0)
    if args.export:
        model = getattr(torchvision.models, args.export[0])(
            **({"weights": args.weights} if args.weights else {"num_classes": args.num_classes}))
        save_safetensors(model.state_dict(), args.export[1], {"format": "pt"})
        print("wrote", args.export[1])
        return
    write("resnet_structure.json", structure())
    write("resnet18.json", golden(torchvision.models.resnet18(num_classes=10), 2, 3, 64))
    write("resnet50.json", golden(torchvision.models.resnet50(num_classes=10), 4, 3, 64))
    write("resnet18_cifar.json", golden(cifar_stem(torchvision.models.resnet18(num_classes=10), 1), 2, 1, 28))


if __name__ == "__main__":
    main()
