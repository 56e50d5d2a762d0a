"""ResNet-18/50 training on synthetic data, data-parallel on CPU over Gloo: the PyTorch column of
scripts/resnet-bench.sh and scripts/memory-bench.sh, the twin of org.ddp4j.examples.ResNetSynthetic
(the job of Horovod's pytorch_synthetic_benchmark.py).

Measures images/s per rank. The model is torchvision's resnet18/resnet50 (no weights, 1000 classes)
when torchvision imports, else the same network defined below (torchvision's layout, parameter names
and initialisation); the first output line says which. After torch.manual_seed(0) (0 + rank with
--rank-seed) and the model, one random batch [B, 3, S, S] with random labels in [0, 1000) is made and
used for every step: zero_grad, forward, CrossEntropyLoss, backward, SGD step (momentum 0.9).
--warmup-steps untimed steps, then --steps timed ones. With WORLD_SIZE > 1 (env://, as started by
benchmarks/pytorch/run.sh) the model is wrapped in DistributedDataParallel with its defaults;
with one process there is no process group. --threads T calls torch.set_num_threads(T) (0: torch's
choice); OMP_NUM_THREADS / OPENBLAS_NUM_THREADS reach BLAS libraries that read them at start.
--autocast bf16 runs forward and loss under torch.autocast('cpu', torch.bfloat16).

Every rank ends with two lines:
  check rank=R loss=L param_sum=P param_crc=C
  summary rank=R world=W model=M batch=B image=S steps=N seconds=T images_per_s=X params=P
T: the timed steps only; X = N x B / T; L: the last loss; P: the sum of all parameters (float64);
C: CRC-32 of the parameters' float32 bytes in order (equal on every rank when DDP kept them equal).

Run:    benchmarks/pytorch/run.sh 2 benchmarks/pytorch/resnet_synthetic.py --model resnet18 --steps 10
smoke:  benchmarks/pytorch/run.sh 1 benchmarks/pytorch/resnet_synthetic.py --model resnet18 \
            --image-size 32 --batch-size 4 --warmup-steps 1 --steps 2
"""
import argparse
import ctypes
import os
import sys
import time
import zlib

import torch
import torch.distributed as dist
import torch.nn as nn

# ---- the network, for interpreters without torchvision ----------------------------------------------


class Basic(nn.Module):
    """Two 3x3 convolutions (ResNet-18/34)."""
    expansion = 1

    def __init__(self, cin, width, stride, downsample):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, width, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = downsample

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        return self.relu(self.bn2(self.conv2(out)) + identity)


class Bottleneck(nn.Module):
    """1x1 down, 3x3 (carrying the stride), 1x1 up by 4 (ResNet-50)."""
    expansion = 4

    def __init__(self, cin, width, stride, downsample):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, width, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, stride, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.conv3 = nn.Conv2d(width, width * 4, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(width * 4)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = downsample

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        return self.relu(self.bn3(self.conv3(out)) + identity)


class ResNet(nn.Module):
    def __init__(self, block, depths, num_classes=1000):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        cin, stages = 64, []
        for i, (width, depth) in enumerate(zip((64, 128, 256, 512), depths)):
            stride = 1 if i == 0 else 2
            down = None
            if stride != 1 or cin != width * block.expansion:
                down = nn.Sequential(nn.Conv2d(cin, width * block.expansion, 1, stride, bias=False),
                                     nn.BatchNorm2d(width * block.expansion))
            blocks = [block(cin, width, stride, down)]
            cin = width * block.expansion
            blocks += [block(cin, width, 1, None) for _ in range(depth - 1)]
            stages.append(nn.Sequential(*blocks))
        self.layer1, self.layer2, self.layer3, self.layer4 = stages
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(cin, num_classes)
        for m in self.modules():  # torchvision's initialisation (Linear keeps PyTorch's default)
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.ones_(m.weight)
                nn.init.zeros_(m.bias)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


def build(name):
    """(model, where it came from)."""
    try:
        import torchvision
        return getattr(torchvision.models, name)(weights=None, num_classes=1000), f"torchvision {torchvision.__version__}"
    except Exception:  # not installed, or a wheel built for another torch
        block, depths = {"resnet18": (Basic, (2, 2, 2, 2)), "resnet50": (Bottleneck, (3, 4, 6, 3))}[name]
        return ResNet(block, depths), "this file's ResNet (no torchvision)"

# ---- the benchmark -------------------------------------------------------------------------------------


def checksum(model):
    """(sum of all parameters, CRC-32 of their float32 bytes)."""
    total, crc = 0.0, 0
    with torch.no_grad():
        for p in model.parameters():
            c = p.detach().float().contiguous()
            total += c.double().sum().item()
            crc = zlib.crc32(ctypes.string_at(c.data_ptr(), c.numel() * c.element_size()), crc)
    return total, crc


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--model", default="resnet50", choices=["resnet18", "resnet50"])
    p.add_argument("--batch-size", type=int, default=32, help="per rank")
    p.add_argument("--image-size", type=int, default=224)
    p.add_argument("--warmup-steps", type=int, default=2)
    p.add_argument("--steps", type=int, default=10, help="timed steps")
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--threads", type=int, default=0, help="torch.set_num_threads (0: torch's choice)")
    p.add_argument("--channels-last", action="store_true")
    p.add_argument("--bucket-cap-mb", type=float, default=25, help="DDP's bucket_cap_mb")
    p.add_argument("--autocast", default="none", choices=["none", "bf16"])
    p.add_argument("--rank-seed", action="store_true", help="seed with 0 + rank (DDP must still end with equal ranks)")
    a = p.parse_args()

    if a.threads > 0:
        torch.set_num_threads(a.threads)
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = 0
    if world > 1:
        dist.init_process_group("gloo")  # env://
        rank, world = dist.get_rank(), dist.get_world_size()

    torch.manual_seed(rank if a.rank_seed else 0)
    model, source = build(a.model)
    params = sum(t.numel() for t in model.parameters())
    data = torch.randn(a.batch_size, 3, a.image_size, a.image_size)
    target = torch.randint(0, 1000, (a.batch_size,))
    if a.channels_last:
        model = model.to(memory_format=torch.channels_last)
        data = data.contiguous(memory_format=torch.channels_last)
    model.train()
    if world > 1:
        # only an explicit non-default cap: PyTorch 2.x also applies an explicit one to the first bucket
        extra = {} if a.bucket_cap_mb == 25 else {"bucket_cap_mb": a.bucket_cap_mb}
        model = nn.parallel.DistributedDataParallel(model, **extra)
    loss_fn = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=a.lr, momentum=0.9)
    if rank == 0:
        print(f"# torch {torch.__version__} python {sys.version.split()[0]} model={a.model} ({source})"
              f" batch={a.batch_size} image={a.image_size} world={world} threads={torch.get_num_threads()}"
              f" channels_last={int(a.channels_last)} autocast={a.autocast} ddp={int(world > 1)}"
              f" warmup={a.warmup_steps} steps={a.steps}", flush=True)

    def step():
        optimizer.zero_grad()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=a.autocast == "bf16"):
            loss = loss_fn(model(data), target)
        loss.backward()
        optimizer.step()
        return loss

    loss = None
    for _ in range(a.warmup_steps):
        loss = step()
    start = time.perf_counter()
    for _ in range(a.steps):
        loss = step()
    elapsed = time.perf_counter() - start

    total, crc = checksum(model)
    last = loss.item() if loss is not None else float("nan")
    print(f"check rank={rank} loss={last:.6f} param_sum={total:.10e} param_crc={crc:08x}", flush=True)
    rate = a.steps * a.batch_size / elapsed if elapsed > 0 else 0.0
    print(f"summary rank={rank} world={world} model={a.model} batch={a.batch_size} image={a.image_size}"
          f" steps={a.steps} seconds={elapsed:.3f} images_per_s={rate:.2f} params={params}", flush=True)
    if world > 1:
        dist.barrier()
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
