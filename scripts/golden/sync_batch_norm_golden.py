#!/usr/bin/python3
"""Golden values for SyncBatchNorm (org.ddp4j.nn.SyncBatchNorm): what the ranks of a group
computing together must equal, i.e. ONE process's batch norm in training mode over the
concatenation of the ranks' unequal batches (torch.nn.SyncBatchNorm's definition; PyTorch's own
SyncBatchNorm runs on GPUs only, so the single-process BatchNorm is the oracle).

Writes java/src/test/resources/golden/sync_batch_norm.json in the format of linear_loss_golden.py.
Cases (the Java test runs each on len(batches) ranks, rank r taking rows
[sum(batches[:r]), sum(batches[:r + 1])) of x):
  "w2":     2 ranks, batches 3 and 5, [N, 4, 3, 5], defaults (affine, momentum 0.1);
  "w3":     3 ranks, batches 2, 0 and 4, [N, 4, 3, 5], momentum=None (cumulative average), affine=False;
  "w2_2d":  2 ranks, batches 3 and 4, [N, 3] (BatchNorm1d's shape), defaults.
Each has STEPS training steps (forward, then backward of a fixed random grad_y), keys
"<case>.<step>.x", ".y", ".grad_y", ".grad_x", ".grad_weight", ".grad_bias" (affine cases),
".running_mean", ".running_var", ".num_batches_tracked", then an eval-mode forward
"<case>.eval.x", ".eval.y"; "<case>.batches", "<case>.shape" (per-sample shape), "<case>.weight",
"<case>.bias", "<case>.repr" (how torch.nn.SyncBatchNorm with those options prints). Channels
have a shift and scale each, one with a large mean (40) so a variance formed carelessly would cancel.

Also "resnet18.repr": how torchvision's resnet18() prints after
torch.nn.SyncBatchNorm.convert_sync_batchnorm, and "ddp.repr": a DistributedDataParallel around a
small model (not converted: PyTorch's DDP takes SyncBatchNorm on GPUs only) (a one-rank gloo group on 127.0.0.1), as print(model) shows them.

Run with Debian's python3-torch and python3-torchvision:
/usr/bin/python3 scripts/golden/sync_batch_norm_golden.py
"""
import os
import sys

import socket

import torch
import torchvision

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from linear_loss_golden import write  # noqa: E402  (same file format)

STEPS = 2
CASES = {
    "w2": dict(batches=[3, 5], shape=[4, 3, 5], momentum=0.1, affine=True),
    "w3": dict(batches=[2, 0, 4], shape=[4, 3, 5], momentum=None, affine=False),
    "w2_2d": dict(batches=[3, 4], shape=[3], momentum=0.1, affine=True),
}


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    g = torch.Generator().manual_seed(20)
    values = {"steps": STEPS}
    for name, case in CASES.items():
        c = case["shape"][0]
        n = sum(case["batches"])
        bn_class = torch.nn.BatchNorm2d if len(case["shape"]) == 3 else torch.nn.BatchNorm1d
        bn = bn_class(c, momentum=case["momentum"], affine=case["affine"])
        view = [1, c] + [1] * (len(case["shape"]) - 1)
        scale = torch.tensor([1.0, 3.0, 0.5, 2.0][:c]).view(view)
        shift = torch.tensor([0.0, -2.0, 40.0, 1.0][:c]).view(view)
        values[f"{name}.batches"] = torch.tensor(case["batches"], dtype=torch.int64)
        values[f"{name}.shape"] = torch.tensor(case["shape"], dtype=torch.int64)
        values[f"{name}.repr"] = repr(torch.nn.SyncBatchNorm(c, momentum=case["momentum"], affine=case["affine"]))
        if case["affine"]:
            with torch.no_grad():
                bn.weight.copy_(torch.rand(c, generator=g) + 0.5)
                bn.bias.copy_(torch.randn(c, generator=g) * 0.5)
            values[f"{name}.weight"] = bn.weight.detach().clone()
            values[f"{name}.bias"] = bn.bias.detach().clone()
        for step in range(STEPS):
            key = f"{name}.{step}"
            x = (torch.randn([n] + case["shape"], generator=g) * scale + shift).requires_grad_(True)
            y = bn(x)
            gy = torch.randn(y.shape, generator=g)
            y.backward(gy)
            values.update({f"{key}.x": x, f"{key}.y": y, f"{key}.grad_y": gy, f"{key}.grad_x": x.grad,
                           f"{key}.running_mean": bn.running_mean.clone(),
                           f"{key}.running_var": bn.running_var.clone(),
                           f"{key}.num_batches_tracked": int(bn.num_batches_tracked)})
            if case["affine"]:
                values[f"{key}.grad_weight"] = bn.weight.grad.clone()
                values[f"{key}.grad_bias"] = bn.bias.grad.clone()
                bn.weight.grad = None
                bn.bias.grad = None
        bn.eval()
        x = torch.randn([n] + case["shape"], generator=g) * scale + shift
        with torch.no_grad():
            values[f"{name}.eval.x"] = x
            values[f"{name}.eval.y"] = bn(x)
    values["resnet18.repr"] = repr(torch.nn.SyncBatchNorm.convert_sync_batchnorm(torchvision.models.resnet18()))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    torch.distributed.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=0, world_size=1)
    small = torch.nn.Sequential(torch.nn.Conv2d(1, 2, 3), torch.nn.BatchNorm2d(2), torch.nn.ReLU())
    # (PyTorch's DDP refuses SyncBatchNorm on CPU modules, so the wrapped one keeps its BatchNorm2d.)
    values["ddp.repr"] = repr(torch.nn.parallel.DistributedDataParallel(small))
    torch.distributed.destroy_process_group()
    write("sync_batch_norm", values)


if __name__ == "__main__":
    main()
