"""The two-conv network on Fashion-MNIST under DDP: the PyTorch twin of org.ddp4j.examples.ConvNetDemo
(scripts/bench.sh, scripts/accuracy-seeds.sh).

Measures training throughput (images/s per rank) and test accuracy of the same job as the demo:
Conv(1->16, 5x5, pad 2)-BatchNorm-ReLU-MaxPool(2), Conv(16->32)-BatchNorm-ReLU-MaxPool(2),
Linear(1568->10); CrossEntropyLoss, SGD (lr 0.05, momentum 0.9), batch 100 per rank, the 60,000
training images shuffled by a DistributedSampler, DDP over Gloo, CPU. The IDX files are Debian's
dataset-fashion-mnist (/usr/share/datasets/fashion-mnist), read here without numpy.
--seed S (or SEED=S in the environment; default 0) seeds both the initial weights and the sampler's
shuffle. Every rank prints
  rank R: steps N time Ts images/s X last loss L
and rank 0 first `# torch VERSION ...` and at the end (the whole test set, 10,000 images)
  test accuracy A

Run:    benchmarks/pytorch/run.sh 2 benchmarks/pytorch/convnet_mnist.py --epochs 1
smoke:  benchmarks/pytorch/run.sh 2 benchmarks/pytorch/convnet_mnist.py --max-steps 20
"""
import argparse
import gzip
import os
import struct
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def read_idx(path):
    """An IDX file of unsigned bytes (gzip-compressed or not) as a uint8 tensor of its shape."""
    with (gzip.open if path.endswith(".gz") else open)(path, "rb") as f:
        raw = f.read()
    magic, kind, ndim = struct.unpack(">HBB", raw[:4])
    if magic != 0 or kind != 0x08:
        raise SystemExit(f"convnet_mnist.py: {path} is not an IDX file of unsigned bytes")
    shape = struct.unpack(">" + "I" * ndim, raw[4:4 + 4 * ndim])
    return torch.frombuffer(bytearray(raw[4 + 4 * ndim:]), dtype=torch.uint8).reshape(shape)


def images(path):
    return (read_idx(path).float() / 255.0).unsqueeze(1)


def labels(path):
    return read_idx(path).long()


class ConvNet(nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        self.layer1 = nn.Sequential(nn.Conv2d(1, 16, 5, 1, 2), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2, 2))
        self.layer2 = nn.Sequential(nn.Conv2d(16, 32, 5, 1, 2), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2, 2))
        self.fc = nn.Linear(32 * 7 * 7, classes)

    def forward(self, x):
        x = self.layer2(self.layer1(x))
        return self.fc(x.flatten(1))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--batch-size", type=int, default=100, help="per rank")
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--max-steps", type=int, default=0, help="stop after this many steps (0: whole epochs)")
    p.add_argument("--seed", type=int, default=int(os.environ.get("SEED", "0")))
    a = p.parse_args()
    dist.init_process_group("gloo")  # env://
    rank, world = dist.get_rank(), dist.get_world_size()
    if rank == 0:
        print(f"# torch {torch.__version__} python {sys.version.split()[0]} ranks {world} threads {torch.get_num_threads()}"
              f" seed {a.seed}", flush=True)
    torch.manual_seed(a.seed)
    train = TensorDataset(images(a.data + "/train-images-idx3-ubyte.gz"), labels(a.data + "/train-labels-idx1-ubyte.gz"))
    sampler = DistributedSampler(train, num_replicas=world, rank=rank, seed=a.seed)
    loader = DataLoader(train, batch_size=a.batch_size, sampler=sampler)
    model = nn.parallel.DistributedDataParallel(ConvNet())
    loss_fn = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), a.lr, momentum=0.9)
    steps, loss, start = 0, None, time.perf_counter()
    for epoch in range(a.epochs):
        sampler.set_epoch(epoch)
        for x, y in loader:
            loss = loss_fn(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            steps += 1
            if a.max_steps and steps >= a.max_steps:
                break
        if a.max_steps and steps >= a.max_steps:
            break
    elapsed = time.perf_counter() - start
    last = loss.item() if loss is not None else float("nan")
    print(f"rank {rank}: steps {steps} time {elapsed:.2f}s images/s {steps * a.batch_size / elapsed:.1f}"
          f" last loss {last:.4f}", flush=True)
    if rank == 0:
        x = images(a.data + "/t10k-images-idx3-ubyte.gz")
        y = labels(a.data + "/t10k-labels-idx1-ubyte.gz")
        model.module.eval()
        with torch.no_grad():
            accuracy = (model.module(x).argmax(1) == y).float().mean().item()
        print(f"test accuracy {accuracy:.4f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
