#!/usr/bin/python3
"""Golden values for ddp4j's transformer layers, made with PyTorch.

Writes java/src/test/resources/golden/transformer_layers.json: Embedding with padding_idx and
repeated indices, LayerNorm over 1 and 2 trailing dims with and without affine, GELU (exact and
tanh), scaled dot-product attention (T = 1, 7, 64, 1000; L != S; causal; additive masks) and
cross entropy over 50257 classes with ignore_index. Keys are prefixed by the case name; entries as
linear_loss_golden.py's. torch 1.13 has no scaled_dot_product_attention, so the reference is
written out, softmax(q k^T * scale + mask) v, in float64 from the stored float32 inputs. The cross
entropy's logits come from an integer formula the Java test repeats (50257-wide rows would make
the file large); only selected gradient columns are stored.

Run with Debian's python3-torch: /usr/bin/python3 scripts/golden/transformer_layers_golden.py
"""
import math
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from linear_loss_golden import write  # noqa: E402


def leaf(t):
    return t.clone().requires_grad_(True)


def embedding_cases(g, out):
    w = torch.randn(10, 3, generator=g)
    idx = torch.tensor([[1, 4, 4, 9], [0, 1, 4, 2]])  # repeats and the padding row 1
    gy = torch.randn(2, 4, 3, generator=g)
    wl = leaf(w)
    y = F.embedding(idx, wl, padding_idx=1)
    y.backward(gy)
    out.update({"emb.weight": w, "emb.index": idx, "emb.gy": gy, "emb.y": y, "emb.gweight": wl.grad,
                "emb.padding_idx": 1})


def layer_norm_cases(g, out):
    x = torch.randn(2, 3, 5, generator=g) * 2 + 1
    gy = torch.randn(2, 3, 5, generator=g)
    out.update({"ln.x": x, "ln.gy": gy})
    for tag, shape in {"d1": [5], "d2": [3, 5]}.items():
        w = torch.randn(*shape, generator=g)
        b = torch.randn(*shape, generator=g)
        out.update({f"ln.{tag}.w": w, f"ln.{tag}.b": b})
        xl, wl, bl = leaf(x), leaf(w), leaf(b)
        y = F.layer_norm(xl, shape, wl, bl, 1e-5)
        y.backward(gy)
        out.update({f"ln.{tag}.y": y, f"ln.{tag}.gx": xl.grad, f"ln.{tag}.gw": wl.grad, f"ln.{tag}.gb": bl.grad})
        xl = leaf(x)
        y = F.layer_norm(xl, shape, None, None, 1e-5)
        y.backward(gy)
        out.update({f"ln.{tag}.plain.y": y, f"ln.{tag}.plain.gx": xl.grad})


def gelu_cases(g, out):
    x = torch.cat([torch.linspace(-6, 6, 41), torch.randn(23, generator=g) * 2])
    gy = torch.randn(x.shape, generator=g)
    out.update({"gelu.x": x, "gelu.gy": gy})
    for approximate in ["none", "tanh"]:
        xl = leaf(x)
        y = F.gelu(xl, approximate=approximate)
        y.backward(gy)
        out.update({f"gelu.{approximate}.y": y, f"gelu.{approximate}.gx": xl.grad})


def attention_reference(q, k, v, mask, causal, scale):
    s = q @ k.transpose(-2, -1) * scale
    if causal:
        L, S = s.shape[-2], s.shape[-1]
        keep = torch.ones(L, S, dtype=torch.bool).tril(diagonal=0)
        s = s.masked_fill(~keep, float("-inf"))
    if mask is not None:
        s = s + mask
    return torch.softmax(s, dim=-1) @ v


ATTENTION_CASES = {
    # name: (leading dims, L, S, E, Ev, causal, mask shape or None)
    "t1": ([2, 2], 1, 1, 8, 8, False, None),
    "t7": ([1, 2], 7, 7, 8, 6, False, None),
    "t7c": ([1, 2], 7, 7, 8, 8, True, None),
    "t64": ([1, 2], 64, 64, 8, 8, False, None),
    "t64c": ([2, 1], 64, 64, 8, 8, True, None),
    "t1000c": ([1, 1], 1000, 1000, 4, 4, True, None),
    "l5s9c": ([2], 5, 9, 8, 8, True, None),
    "l9s5c": ([2], 9, 5, 8, 8, True, None),
    "l70s130": ([1, 1], 70, 130, 8, 4, False, None),
    "mask2d": ([2, 2], 7, 11, 8, 8, False, [7, 11]),
    "mask4d": ([2, 2], 7, 11, 8, 8, True, [2, 1, 7, 11]),
    "maskrow": ([2, 2], 7, 11, 8, 8, False, [2, 1, 1, 11]),
}


def attention_cases(g, out):
    for name, (lead, L, S, E, Ev, causal, mask_shape) in ATTENTION_CASES.items():
        q = torch.randn(*lead, L, E, generator=g)
        k = torch.randn(*lead, S, E, generator=g)
        v = torch.randn(*lead, S, Ev, generator=g)
        gy = torch.randn(*lead, L, Ev, generator=g)
        mask = None
        p = f"att.{name}."
        if mask_shape is not None:
            mask = torch.randn(*mask_shape, generator=g)
            # Some keys excluded outright, never a whole row (that gives NaN in PyTorch).
            drop = torch.rand(*mask_shape, generator=g) < 0.2
            drop[..., 0] = False
            mask = mask.masked_fill(drop, float("-inf"))
            # JSON has no -inf: the finite values and where -inf goes are stored apart.
            out[p + "mask"] = mask.masked_fill(drop, 0.0)
            out[p + "mask_neg_inf"] = drop.long()
        scale = 1 / math.sqrt(E)
        ql, kl, vl = (t.double().requires_grad_(True) for t in (q, k, v))
        y = attention_reference(ql, kl, vl, None if mask is None else mask.double(), causal, scale)
        y.backward(gy.double())
        out.update({p + "q": q, p + "k": k, p + "v": v, p + "gy": gy, p + "causal": causal,
                    p + "y": y.float(), p + "gq": ql.grad.float(), p + "gk": kl.grad.float(), p + "gv": vl.grad.float()})


def ce_logits(n, v):
    """The integer formula ddp4j's test repeats: values k/64 - 8 for k in [0, 1024)."""
    r = torch.arange(n, dtype=torch.int64).unsqueeze(1)
    c = torch.arange(v, dtype=torch.int64).unsqueeze(0)
    return ((c * 7919 + r * 104729 + (c * c) % 1031) % 1024).float() / 64 - 8


def cross_entropy_cases(out):
    V = 50257
    x = ce_logits(4, V)
    target = torch.tensor([5, -100, 50256, 123])
    xl = leaf(x)
    loss = F.cross_entropy(xl, target, ignore_index=-100)
    loss.backward()
    cols = torch.tensor([0, 1, 5, 123, 777, 50000, 50256])
    out.update({"ce.target": target, "ce.ignore_index": -100, "ce.loss": loss, "ce.cols": cols,
                "ce.grad_cols": xl.grad[:, cols], "ce.grad_abs_sum": xl.grad.abs().sum(dim=1)})
    loss_all = F.cross_entropy(x[:2], torch.tensor([7, 7]), ignore_index=7)
    out["ce.all_ignored_loss_is_nan"] = bool(torch.isnan(loss_all))


def main():
    g = torch.Generator().manual_seed(33)
    out = {}
    embedding_cases(g, out)
    layer_norm_cases(g, out)
    gelu_cases(g, out)
    attention_cases(g, out)
    cross_entropy_cases(out)
    write("transformer_layers", out)


if __name__ == "__main__":
    main()
