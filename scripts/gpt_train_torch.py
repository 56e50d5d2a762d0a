#!/usr/bin/env python3
"""PyTorch twin of ddp4j's GPT demo (org.ddp4j.examples.GPTDemo), for side-by-side comparisons.

It trains a GPT-2 written in plain torch (Hugging Face's parameter names and layout:
transformer.wte / wpe / drop / h.N.{ln_1, attn.c_attn, attn.c_proj, ln_2, mlp.c_fc, mlp.c_proj} /
ln_f, lm_head tied to wte, Conv1D weights [in, out]) on the token files that
org.ddp4j.text.PrepareText writes (train.bin / val.bin as uint16, meta.json), with the same
options, defaults and output lines as GPTDemo: AdamW (weight decay on parameters of dim >= 2 only,
betas (0.9, --beta2)), linear warm-up from lr/100 then cosine to --min-lr (SequentialLR of LinearLR
and CosineAnnealingLR), gradient clipping, gradient accumulation under no_sync(), optional bf16
autocast on the CPU, validation loss every --eval-interval steps averaged over the ranks, a
`summary ...` line per rank and a sample on rank 0.

Run it (CPU only; torch and numpy, tiktoken for decoding gpt2 samples):

    # one process
    python scripts/gpt_train_torch.py --data /tmp/fortunes-gpt2 --max-iters 200
    # data-parallel over gloo, 2 ranks on this machine
    torchrun --nproc-per-node 2 scripts/gpt_train_torch.py --data /tmp/fortunes-gpt2 --threads 1

Launched by torchrun with WORLD_SIZE > 1 it wraps the model in DistributedDataParallel over gloo;
otherwise it runs as one plain process. --threads (default 1) sets torch.set_num_threads per rank.

What differs from GPTDemo:
  * Batches: each rank draws its windows' starts with torch.randint from a torch.Generator seeded
    seed*1000 + rank (validation: a fresh generator seeded (seed+1)*1000 + rank at every evaluation,
    so every evaluation sees the same windows). GPTDemo's TokenWindows draws uniform starts from its
    own generator, so the two programs train on different (equally distributed) windows; losses
    compare statistically, not bit for bit. Weights come from torch.manual_seed(seed), dropout from
    torch's global generator, the sample from a generator seeded seed+2: not ddp4j's random streams.
  * The ranks' validation losses are summed with all_reduce and divided by the world size (gloo has
    no ReduceOp.AVG); the result is the same average.
  * The summary line ends with peak_rss_mb=P (peak resident memory of this process, from
    resource.getrusage) where GPTDemo prints parameters_crc32=C.
  * --init-from, --save, --resume and --stop-after are not implemented; --autocast takes none|bf16;
    --shard takes none|full (no zero1), and --shard full prints no sample.
  * The header line's autocast reads "bf16" without ddp4j's kernel name.
"""

import argparse
import contextlib
import json
import math
import os
import resource
import sys
import time
import warnings

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F


# ---------------------------------------------------------------------------------------------
# Options (GPTDemo's names and defaults)

def parse_args(argv=None):
    p = argparse.ArgumentParser(
        description="Trains a GPT-2 on nanoGPT-style token files, data-parallel over torchrun's ranks "
                    "(PyTorch twin of ddp4j's GPTDemo).")
    p.add_argument("--data", required=True, metavar="DIR",
                   help="Folder with train.bin, val.bin and meta.json from org.ddp4j.text.PrepareText.")
    p.add_argument("--n-layer", type=int, default=4, help="Transformer blocks (default: %(default)s).")
    p.add_argument("--n-head", type=int, default=4, help="Attention heads (default: %(default)s).")
    p.add_argument("--n-embd", type=int, default=128, help="Model width (default: %(default)s).")
    p.add_argument("--block-size", type=int, default=64, help="Tokens per sequence, T (default: %(default)s).")
    p.add_argument("--batch-size", type=int, default=8,
                   help="Sequences per micro-batch and rank, B (default: %(default)s).")
    p.add_argument("--grad-accum", type=int, default=1, help="Micro-batches per optimizer step (default: %(default)s).")
    p.add_argument("--max-iters", type=int, default=200, help="Optimizer steps in all (default: %(default)s).")
    p.add_argument("--lr", type=float, default=1e-3, help="Peak learning rate (default: %(default)s).")
    p.add_argument("--min-lr", type=float, default=1e-4,
                   help="Learning rate at the end of the cosine (default: %(default)s).")
    p.add_argument("--warmup-iters", type=int, default=20, help="Steps of linear warm-up (default: %(default)s).")
    p.add_argument("--weight-decay", type=float, default=0.1,
                   help="AdamW's decay on matrices and embeddings (default: %(default)s).")
    p.add_argument("--beta2", type=float, default=0.95, help="AdamW's beta2 (default: %(default)s; beta1 is 0.9).")
    p.add_argument("--grad-clip", type=float, default=1.0,
                   help="Clip the gradients' norm to this; 0 turns clipping off (default: %(default)s).")
    p.add_argument("--dropout", type=float, default=0.0, help="All three GPT-2 dropouts (default: %(default)s).")
    p.add_argument("--eval-interval", type=int, default=50,
                   help="Steps between validation losses (default: %(default)s).")
    p.add_argument("--eval-iters", type=int, default=10,
                   help="Batches per validation loss, per rank (default: %(default)s).")
    p.add_argument("--log-interval", type=int, default=10,
                   help="Steps between loss lines on rank 0 (default: %(default)s).")
    p.add_argument("--autocast", choices=["none", "bf16"], default="none",
                   help="none or bf16: forward and loss under torch.autocast('cpu', torch.bfloat16) "
                        "(default: %(default)s).")
    p.add_argument("--seed", type=int, default=1337,
                   help="Seeds the weights and every rank's batches (default: %(default)s).")
    p.add_argument("--sample-tokens", type=int, default=100,
                   help="Tokens rank 0 samples at the end (default: %(default)s; 0: none).")
    p.add_argument("--temperature", type=float, default=0.8, help="Sampling temperature (default: %(default)s).")
    p.add_argument("--top-k", type=int, default=200,
                   help="Sample among the k likeliest tokens (default: %(default)s; 0: all).")
    p.add_argument("--threads", type=int, default=1, help="torch.set_num_threads per rank (default: %(default)s).")
    p.add_argument("--shard", choices=["none", "full"], default="none",
                   help="none: DistributedDataParallel; full: fully_shard (FSDP2) on each block, then the model, as "
                        "GPTDemo --shard full (default: %(default)s).")
    args = p.parse_args(argv)
    check_options(p, args)
    return args


def check_options(p, a):
    for name in ("n_layer", "n_head", "n_embd", "block_size", "batch_size", "grad_accum", "max_iters",
                 "eval_interval", "eval_iters", "log_interval", "threads"):
        if getattr(a, name) <= 0:
            p.error(f"--{name.replace('_', '-')} must be positive, got {getattr(a, name)}")
    if a.n_embd % a.n_head != 0:
        p.error(f"--n-embd {a.n_embd} must be a multiple of --n-head {a.n_head}")
    if a.warmup_iters < 0 or a.warmup_iters >= a.max_iters:
        p.error(f"--warmup-iters must lie in [0, --max-iters), got {a.warmup_iters} with --max-iters {a.max_iters}")
    if not (a.lr > 0) or not (a.min_lr >= 0) or a.min_lr > a.lr:
        p.error(f"need 0 <= --min-lr <= --lr and --lr > 0, got --lr {a.lr}, --min-lr {a.min_lr}")
    if a.sample_tokens < 0 or not (a.temperature > 0) or a.top_k < 0:
        p.error("need --sample-tokens >= 0, --temperature > 0 and --top-k >= 0")


# ---------------------------------------------------------------------------------------------
# Data

def read_data(folder):
    paths = [os.path.join(folder, n) for n in ("meta.json", "train.bin", "val.bin")]
    if not all(os.path.isfile(f) for f in paths):
        sys.exit(f"{folder} lacks train.bin, val.bin or meta.json: write them first with "
                 f"java -cp ddp4j.jar org.ddp4j.text.PrepareText --out {folder}")
    with open(paths[0], encoding="utf-8") as f:
        meta = json.load(f)
    train = np.memmap(paths[1], dtype=np.uint16, mode="r")
    val = np.memmap(paths[2], dtype=np.uint16, mode="r")
    return meta, train, val


class Windows:
    """Batches of B random windows of T+1 consecutive tokens: inputs the first T, labels the last T."""

    def __init__(self, tokens, block_size, batch_size, seed):
        if len(tokens) < block_size + 1:
            sys.exit(f"a token file holds {len(tokens)} tokens, fewer than the block_size + 1 = {block_size + 1} "
                     "that one window needs; use a smaller --block-size or a longer corpus")
        self.tokens, self.t, self.b = tokens, block_size, batch_size
        self.generator = torch.Generator().manual_seed(seed)

    def next(self):
        starts = torch.randint(len(self.tokens) - self.t, (self.b,), generator=self.generator).tolist()
        rows = np.stack([self.tokens[s:s + self.t + 1] for s in starts]).astype(np.int64)
        rows = torch.from_numpy(rows)
        return rows[:, :-1].contiguous(), rows[:, 1:].contiguous()


# ---------------------------------------------------------------------------------------------
# GPT-2, Hugging Face's names and layout

class Conv1D(nn.Module):
    """Hugging Face's Conv1D: a linear layer whose weight is stored [in, out]."""

    def __init__(self, n_in, n_out):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(n_in, n_out))
        self.bias = nn.Parameter(torch.zeros(n_out))

    def forward(self, x):
        shape = x.shape[:-1] + (self.weight.shape[1],)
        return torch.addmm(self.bias, x.reshape(-1, x.shape[-1]), self.weight).view(shape)


class Attention(nn.Module):
    def __init__(self, n_embd, n_head, dropout):
        super().__init__()
        self.n_head, self.dropout = n_head, dropout
        self.c_attn = Conv1D(n_embd, 3 * n_embd)
        self.c_proj = Conv1D(n_embd, n_embd)
        self.resid_dropout = nn.Dropout(dropout)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.c_attn(x).split(c, dim=2)
        q, k, v = (z.view(b, t, self.n_head, c // self.n_head).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, dropout_p=self.dropout if self.training else 0.0, is_causal=True)
        y = y.transpose(1, 2).contiguous().view(b, t, c)
        return self.resid_dropout(self.c_proj(y))


class MLP(nn.Module):
    def __init__(self, n_embd, dropout):
        super().__init__()
        self.c_fc = Conv1D(n_embd, 4 * n_embd)
        self.c_proj = Conv1D(4 * n_embd, n_embd)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        return self.dropout(self.c_proj(F.gelu(self.c_fc(x), approximate="tanh")))


class Block(nn.Module):
    def __init__(self, n_embd, n_head, dropout, eps):
        super().__init__()
        self.ln_1 = nn.LayerNorm(n_embd, eps=eps)
        self.attn = Attention(n_embd, n_head, dropout)
        self.ln_2 = nn.LayerNorm(n_embd, eps=eps)
        self.mlp = MLP(n_embd, dropout)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT2LMHeadModel(nn.Module):
    def __init__(self, vocab_size, n_positions, n_embd, n_layer, n_head, dropout, eps=1e-5, init_std=0.02):
        super().__init__()
        self.n_positions = n_positions
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(vocab_size, n_embd),
            wpe=nn.Embedding(n_positions, n_embd),
            drop=nn.Dropout(dropout),
            h=nn.ModuleList(Block(n_embd, n_head, dropout, eps) for _ in range(n_layer)),
            ln_f=nn.LayerNorm(n_embd, eps=eps),
        ))
        self.lm_head = nn.Linear(n_embd, vocab_size, bias=False)
        self.lm_head.weight = self.transformer.wte.weight  # tied
        for name, p in self.named_parameters():
            if name.endswith("c_proj.weight"):
                nn.init.normal_(p, 0.0, init_std / math.sqrt(2 * n_layer))
            elif name.endswith(".weight") and ".ln_" not in name and not name.startswith("transformer.ln_f"):
                nn.init.normal_(p, 0.0, init_std)  # wte (= lm_head), wpe, c_attn, c_fc
            elif name.endswith(".bias"):
                nn.init.zeros_(p)
            # LayerNorm weights keep their ones

    def forward(self, idx):
        t = idx.shape[1]
        pos = torch.arange(t, dtype=torch.long, device=idx.device)
        x = self.transformer.drop(self.transformer.wte(idx) + self.transformer.wpe(pos))
        for block in self.transformer.h:
            x = block(x)
        return self.lm_head(self.transformer.ln_f(x))

    @torch.no_grad()
    def generate(self, ids, new_tokens, temperature, top_k, generator):
        was_training = self.training
        self.eval()
        for _ in range(new_tokens):
            logits = self(ids[:, -self.n_positions:])[:, -1, :].float() / temperature
            if top_k > 0:
                kth = torch.topk(logits, min(top_k, logits.shape[-1])).values[:, -1:]
                logits = logits.masked_fill(logits < kth, float("-inf"))
            nxt = torch.multinomial(F.softmax(logits, dim=-1), 1, generator=generator)
            ids = torch.cat([ids, nxt], dim=1)
        self.train(was_training)
        return ids


# ---------------------------------------------------------------------------------------------
# Measurements and decoding

def gemm_gflops():
    """FLOP/s (in GFLOP/s) of one [512, 512] x [512, 512] float32 product, best of 5 after a warm-up."""
    g = torch.Generator().manual_seed(0)
    a = torch.randn(512, 512, generator=g)
    b = torch.randn(512, 512, generator=g)
    torch.mm(a, b)
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter_ns()
        torch.mm(a, b)
        best = min(best, time.perf_counter_ns() - t0)
    return 2.0 * 512 ** 3 / best


def decode(ids, tokenizer):
    if tokenizer == "gpt2":
        try:
            import tiktoken
            return tiktoken.get_encoding("gpt2").decode(ids, errors="replace")
        except Exception as e:  # no tiktoken, or no network for its vocabulary files
            reason = str(e).splitlines()[0][:160] if str(e) else ""
            return f"(cannot decode with tiktoken's gpt2, {type(e).__name__}: {reason}; token ids follow)\n{ids}"
    return bytes(ids).decode("utf-8", errors="replace")


# ---------------------------------------------------------------------------------------------

def main():
    args = parse_args()
    warnings.filterwarnings("ignore", message=".*epoch parameter in `scheduler.step\\(\\)`.*")
    torch.set_num_threads(args.threads)
    meta, train, val = read_data(args.data)
    tokenizer = meta.get("tokenizer", "bytes").lower()
    vocab_size = int(meta["vocab_size"])
    eot = int(meta.get("eot_token", -1))

    distributed = int(os.environ.get("WORLD_SIZE", "1")) > 1
    if distributed:
        dist.init_process_group("gloo")
    rank = dist.get_rank() if distributed else 0
    world = dist.get_world_size() if distributed else 1

    torch.manual_seed(args.seed)  # the weights, then dropout's masks: the same on every rank
    net = GPT2LMHeadModel(vocab_size, args.block_size, args.n_embd, args.n_layer, args.n_head, args.dropout)
    fsdp = distributed and args.shard == "full"
    if fsdp:
        from torch.distributed.device_mesh import init_device_mesh
        from torch.distributed.fsdp import fully_shard
        mesh = init_device_mesh("cpu", (world,))
        for block in net.transformer.h:
            fully_shard(block, mesh=mesh)
        model = fully_shard(net, mesh=mesh)
    else:
        model = nn.parallel.DistributedDataParallel(net) if distributed else net

    decay = [p for p in net.parameters() if p.dim() >= 2]
    no_decay = [p for p in net.parameters() if p.dim() < 2]
    optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": args.weight_decay},
                                   {"params": no_decay, "weight_decay": 0.0}],
                                  lr=args.lr, betas=(0.9, args.beta2), fused=False)
    sched = torch.optim.lr_scheduler
    if args.warmup_iters == 0:
        schedule = sched.CosineAnnealingLR(optimizer, T_max=args.max_iters, eta_min=args.min_lr)
    else:
        schedule = sched.SequentialLR(optimizer, [
            sched.LinearLR(optimizer, start_factor=0.01, end_factor=1.0, total_iters=args.warmup_iters),
            sched.CosineAnnealingLR(optimizer, T_max=args.max_iters - args.warmup_iters, eta_min=args.min_lr),
        ], milestones=[args.warmup_iters])

    train_batches = Windows(train, args.block_size, args.batch_size, args.seed * 1000 + rank)
    Windows(val, args.block_size, args.batch_size, 0)  # checks val.bin's length up front

    n_params = sum(p.numel() for p in net.parameters()) - net.transformer.wpe.weight.numel()
    flops_per_token = 6.0 * n_params + 12.0 * args.n_layer * args.n_embd * args.block_size
    gflops = gemm_gflops()
    autocast = (lambda: torch.autocast("cpu", dtype=torch.bfloat16)) if args.autocast == "bf16" \
        else contextlib.nullcontext
    if rank == 0:
        print(f"GPT-2: {args.n_layer} layers, {args.n_head} heads, width {args.n_embd}, block {args.block_size}, "
              f"vocabulary {vocab_size} ({tokenizer}), {n_params / 1e6:.2f}M parameters; {world} rank(s) x "
              f"{args.batch_size} sequences x {args.grad_accum} micro-batches; autocast {args.autocast}", flush=True)

    def validation_loss():
        windows = Windows(val, args.block_size, args.batch_size, (args.seed + 1) * 1000 + rank)
        was_training = net.training
        net.eval()
        total = 0.0
        with torch.no_grad():
            for _ in range(args.eval_iters):
                x, y = windows.next()
                with autocast():
                    logits = net(x)
                    total += F.cross_entropy(logits.view(-1, vocab_size), y.view(-1), ignore_index=-100).item()
        net.train(was_training)
        mean = torch.tensor([total / args.eval_iters], dtype=torch.float32)
        if distributed:
            dist.all_reduce(mean, op=dist.ReduceOp.SUM)  # gloo has no AVG
            mean /= world
        return mean.item()

    last_loss, last_val = float("nan"), float("nan")
    tokens_per_step = args.batch_size * args.block_size * args.grad_accum
    start = interval_start = time.perf_counter()
    interval_first = 0
    for it in range(args.max_iters):
        if it % args.eval_interval == 0 and it > 0:
            last_val = validation_loss()
            if rank == 0:
                print(f"step {it}: val loss {last_val:.4f}", flush=True)
        optimizer.zero_grad(set_to_none=True)
        loss = 0.0
        for micro in range(args.grad_accum):
            x, y = train_batches.next()
            if fsdp:
                model.set_requires_gradient_sync(micro == args.grad_accum - 1)
                sync = contextlib.nullcontext()
            else:
                sync = model.no_sync() if distributed and micro < args.grad_accum - 1 else contextlib.nullcontext()
            with sync:
                with autocast():
                    logits = model(x)
                    micro_loss = F.cross_entropy(logits.view(-1, vocab_size), y.view(-1),
                                                 ignore_index=-100) / args.grad_accum
                micro_loss.backward()
            loss += micro_loss.item()
        if args.grad_clip > 0:
            torch.nn.utils.clip_grad_norm_(net.parameters(), args.grad_clip)
        optimizer.step()
        schedule.step()
        last_loss = loss
        if rank == 0 and ((it + 1) % args.log_interval == 0 or it + 1 == args.max_iters):
            now = time.perf_counter()
            steps = it + 1 - interval_first
            seconds = now - interval_start
            tps = steps * tokens_per_step / seconds
            print(f"iter {it + 1}: loss {last_loss:.4f}, lr {optimizer.param_groups[0]['lr']:.2e}, "
                  f"{seconds * 1e3 / steps:.0f} ms/step, {tps:.0f} tokens/s, "
                  f"mfu {100 * tps * flops_per_token / (gflops * 1e9):.1f}%", flush=True)
            interval_start, interval_first = now, it + 1
    seconds = time.perf_counter() - start
    last_val = validation_loss()
    if rank == 0:
        print(f"step {args.max_iters}: val loss {last_val:.4f}", flush=True)
    tps = args.max_iters * tokens_per_step / seconds if seconds > 0 else 0.0
    peak_rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # Linux: KiB
    print(f"summary rank={rank} world={world} steps={args.max_iters} seconds={seconds:.3f} tokens_per_s={tps:.1f} "
          f"loss={last_loss:.6f} val_loss={last_val:.6f} mfu={tps * flops_per_token / (gflops * 1e9):.4f} "
          f"gemm_gflops={gflops:.1f} peak_rss_mb={peak_rss_mb:.1f}", flush=True)
    if rank == 0 and args.sample_tokens > 0 and not fsdp:  # FSDP's forward is a collective: no rank-0-only sampling
        first = eot if eot >= 0 else ord("\n")
        ids = net.generate(torch.tensor([[first]], dtype=torch.long), args.sample_tokens, args.temperature,
                           args.top_k, torch.Generator().manual_seed(args.seed + 2))
        print("sample:")
        print(decode(ids[0, 1:].tolist(), tokenizer), flush=True)
    if distributed:
        dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
