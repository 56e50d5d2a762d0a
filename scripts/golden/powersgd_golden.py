#!/usr/bin/python3
"""Golden values for ddp4j's PowerSGD communication hook, made with PyTorch's own powerSGD_hook.

Writes java/src/test/resources/golden/powersgd.json (format of linear_loss_golden.py), and
powersgd_rank4.json (see SHAPES4: rank 4, where PyTorch orthogonalises by QR). One bucket
of five gradients (a 16x10 matrix, a bias, an 8x3x3x3 conv weight viewed as 8x27, another 16x10
matrix and a bias: the second 16x10 is grouped with the first, as PyTorch orders the compressed
tensors by shape) goes through the hook for 5 iterations with a new gradient each time, for ranks 1 and 2
(start_powerSGD_iter=2, so iterations 0-1 are plain all-reduce and 2-4 PowerSGD, with error
feedback and warm start). Recorded: the gradients fed in, the bucket after each iteration, the
error and Q memory at the end, and the initial Qs the hook drew.

It runs with one process (world size 1: gloo on 127.0.0.1 through a file store), so every
all-reduce is the identity and the division by the world size is by 1: what is checked is the
hook's arithmetic (error feedback, P = MQ, orthogonalisation, Q = M^T P, M = P Q^T, warm start).
PyTorch seeds Q with torch.manual_seed(state.rng.randint(10**9)) + torch.randn, which ddp4j cannot
reproduce, so the script recomputes those draws (same numpy RandomState, same torch seed, same
order) and writes them; the Java test injects them.

Run with Debian's python3-torch: /usr/bin/python3 scripts/golden/powersgd_golden.py
"""
import os
import sys
import tempfile

import numpy as np
import torch
import torch.distributed as dist
from torch.distributed.algorithms.ddp_comm_hooks import powerSGD_hook as powerSGD

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from linear_loss_golden import write  # noqa: E402  (same file format)

SHAPES = [(16, 10), (16,), (8, 3, 3, 3), (16, 10), (10,)]
ITERS = 5
START = 2
SEED = 0


# Rank 4 (java/src/test/resources/golden/powersgd_rank4.json): PyTorch orthogonalises by QR above rank 2.
# Shapes large enough to be compressed at rank 4; the first matrix's gradients have rank 2 (products
# of thin factors), so P is rank-deficient, where Gram-Schmidt and QR part ways.
SHAPES4 = [(32, 40), (32,), (24, 30)]
LOW_RANK = 2


class Bucket:
    """What powerSGD_hook calls on a dist.GradBucket: buffer(), index(), gradients(), is_last()."""

    def __init__(self, buffer, shapes):
        self._buffer = buffer
        self._grads = []
        at = 0
        for s in shapes:
            n = int(np.prod(s))
            self._grads.append(buffer[at:at + n].view(s))
            at += n

    def buffer(self):
        return self._buffer

    def index(self):
        return 0

    def gradients(self):
        return self._grads

    def is_last(self):
        return True


def initial_qs(rank, shapes):
    """The hook's first draw for bucket 0: the same RandomState, torch seed and randn calls, in its q order."""
    rng = np.random.RandomState(SEED)
    torch.manual_seed(rng.randint(1_000_000_000))
    by_shape = {}
    for s in shapes:
        n = s[0]
        m = int(np.prod(s)) // n
        r = min(n, m, rank)
        if (n + m) * r * 2 < n * m:
            by_shape.setdefault((n, m), []).append(r)
    out = []
    for (n, m), ranks in by_shape.items():
        for r in ranks:
            out.append(torch.randn(1, m, r, device="cpu", dtype=torch.float32).reshape(-1))
    return torch.cat(out)


def run(rank, grads, shapes=SHAPES):
    state = powerSGD.PowerSGDState(process_group=None, matrix_approximation_rank=rank, start_powerSGD_iter=START,
                                   min_compression_rate=2, use_error_feedback=True, warm_start=True,
                                   orthogonalization_epsilon=0, random_seed=SEED)
    outs = []
    drawn = []
    real_randn = torch.randn

    def recording_randn(*args, **kwargs):  # what the hook draws for its Qs, in its order
        t = real_randn(*args, **kwargs)
        drawn.append(t.clone().reshape(-1))
        return t

    for it in range(ITERS):
        buf = grads[it].clone()
        torch.randn = recording_randn
        try:
            out = powerSGD.powerSGD_hook(state, Bucket(buf, shapes)).wait()
        finally:
            torch.randn = real_randn
        outs.append(out.clone())
    # The recomputation agrees with what the hook drew (a check of the script's reading of the hook).
    assert torch.equal(torch.cat(drawn), initial_qs(rank, shapes))
    return {
        f"r{rank}_outputs": torch.stack(outs),
        f"r{rank}_error": state.error_dict[0].clone(),
        f"r{rank}_q_memory": state.q_memory_dict[0].clone(),
        f"r{rank}_initial_q": torch.cat(drawn),
        f"r{rank}_iter": [float(state.iter)],
    }


def main():
    with tempfile.TemporaryDirectory() as d:
        dist.init_process_group("gloo", init_method="file://" + os.path.join(d, "store"), rank=0, world_size=1)
        total = sum(int(np.prod(s)) for s in SHAPES)
        g = torch.Generator().manual_seed(5)
        grads = torch.randn(ITERS, total, generator=g)
        out = {"shapes": [list(s) for s in SHAPES], "iters": [ITERS], "start": [START], "grads": grads}
        for rank in (1, 2):
            out.update(run(rank, grads))
        write("powersgd", out)

        sizes = [int(np.prod(s)) for s in SHAPES4]
        grads4 = torch.randn(ITERS, sum(sizes), generator=g)
        n, m = SHAPES4[0]
        for it in range(ITERS):
            grads4[it, :n * m] = (torch.randn(n, LOW_RANK, generator=g) @ torch.randn(LOW_RANK, m, generator=g)).reshape(-1)
        out4 = {"shapes": [list(s) for s in SHAPES4], "iters": [ITERS], "start": [START], "grads": grads4}
        out4.update(run(4, grads4, SHAPES4))
        dist.destroy_process_group()
    write("powersgd_rank4", out4)


if __name__ == "__main__":
    main()
