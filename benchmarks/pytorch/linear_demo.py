"""The linear demo under DDP, the PyTorch twin of org.ddp4j.examples.LinearDemo (scripts/bench.sh).

Measures the time per training step of the smallest DDP job: a 2->2 nn.Linear on four samples
([0.1, 0.1] ... [0.4, 0.4]), batch 1 per rank through a DistributedSampler without shuffling, one
random target [1, 2], MSELoss, SGD lr 0.01, wrapped in DistributedDataParallel over Gloo. STEPS=n
(environment) or --epochs n repeats the epoch n times (default 1). Every rank prints one line
  rank R: N epochs, T us/step [final named parameters]
and rank 0 first a line `# torch VERSION ...`.

Run:    STEPS=2000 benchmarks/pytorch/run.sh 2 benchmarks/pytorch/linear_demo.py
smoke:  STEPS=50 benchmarks/pytorch/run.sh 2 benchmarks/pytorch/linear_demo.py
"""
import argparse
import os
import sys
import time

import torch
import torch.distributed as dist
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--epochs", type=int, default=int(os.environ.get("STEPS", "1")),
                   help="passes over the four samples (default: $STEPS, else 1)")
    a = p.parse_args()
    dist.init_process_group("gloo")  # env://
    rank = dist.get_rank()
    if rank == 0:
        print(f"# torch {torch.__version__} python {sys.version.split()[0]} ranks {dist.get_world_size()}", flush=True)
    samples = torch.tensor([[0.1, 0.1], [0.2, 0.2], [0.3, 0.3], [0.4, 0.4]])
    loader = DataLoader(samples, batch_size=1, sampler=DistributedSampler(samples, shuffle=False))
    target = torch.randn(1, 2)
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(2, 2))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    loss_fn = torch.nn.MSELoss()
    epochs = a.epochs
    start = time.perf_counter()
    for _ in range(epochs):
        for batch in loader:
            optimizer.zero_grad()
            loss_fn(model(batch), target).backward()
            optimizer.step()
    elapsed = time.perf_counter() - start
    us_per_step = elapsed / (epochs * len(loader)) * 1e6
    print(f"rank {rank}: {epochs} epochs, {us_per_step:.1f} us/step", list(model.named_parameters()), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
