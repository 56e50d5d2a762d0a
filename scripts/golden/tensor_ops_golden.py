#!/usr/bin/python3
"""Golden values for ddp4j's transformer tensor ops (matmul, shape ops, broadcasting element-wise
ops, comparisons and masks, unary functions, reductions, softmax, index_select / gather), made
with PyTorch: each case's inputs, the upstream gradient "gy", the output and the inputs' gradients.

Writes java/src/test/resources/golden/tensor_ops.json. Each tensor entry is {"shape": [...],
"data": [...flat, row-major...]} (float32, or "dtype": "int64" / "bool" with integer data); keys are
"<case>.<name>". Seeds are fixed, so a rerun reproduces the same file.

Run with Debian's python3-torch: /usr/bin/python3 scripts/golden/tensor_ops_golden.py
"""
import json
import os

import torch

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "java", "src", "test", "resources",
                   "golden")


def entry(t):
    t = t.detach()
    if t.dtype == torch.bool:
        return {"shape": list(t.shape), "data": t.flatten().long().tolist(), "dtype": "bool"}
    e = {"shape": list(t.shape), "data": t.flatten().tolist()}
    if t.dtype == torch.int64:
        e["dtype"] = "int64"
    else:
        assert t.dtype == torch.float32, t.dtype
        assert torch.isfinite(t).all(), "JSON has no infinities"
    return e


def write(name, entries):
    path = os.path.join(OUT, name + ".json")
    # One entry per line: compact, yet diffs stay readable.
    lines = [json.dumps(k) + ": " + json.dumps(entry(v) if isinstance(v, torch.Tensor) else v)
             for k, v in entries.items()]
    with open(path, "w") as f:
        f.write("{\n" + ",\n".join(lines) + "\n}\n")
    print("wrote", os.path.normpath(path))


G = torch.Generator().manual_seed(33)
OUT_ENTRIES = {}


def randn(*shape):
    return torch.randn(tuple(shape), generator=G)


def case(name, fn, **inputs):
    """Runs fn on leaf copies of the float inputs, backward with a random gy; stores everything."""
    leaves = {k: (v.clone().requires_grad_(True) if v.dtype == torch.float32 else v) for k, v in inputs.items()}
    y = fn(**leaves)
    gy = randn(*y.shape)
    y.backward(gy)
    for k, v in inputs.items():
        OUT_ENTRIES[f"{name}.{k}"] = v
    OUT_ENTRIES[f"{name}.y"] = y
    OUT_ENTRIES[f"{name}.gy"] = gy
    for k, v in leaves.items():
        if v.dtype == torch.float32:
            OUT_ENTRIES[f"{name}.g{k}"] = v.grad


def pieces(name, fn, x):
    """Ops with several outputs (split, chunk): each piece backward with its own gy."""
    xl = x.clone().requires_grad_(True)
    outs = fn(xl)
    OUT_ENTRIES[f"{name}.x"] = x
    OUT_ENTRIES[f"{name}.count"] = len(outs)
    for i, o in enumerate(outs):
        gy = randn(*o.shape)
        o.backward(gy)
        OUT_ENTRIES[f"{name}.y{i}"] = o
        OUT_ENTRIES[f"{name}.gy{i}"] = gy
    OUT_ENTRIES[f"{name}.gx"] = xl.grad


def matmul_cases():
    for name, (sa, sb) in {"mm": ((3, 4), (4, 5)), "batched_2d": ((2, 3, 4, 5), (5, 6)),
                           "broadcast_batch": ((2, 1, 4, 5), (3, 5, 2)), "vec_mat": ((4,), (4, 5)),
                           "mat_vec": ((3, 4), (4,)), "dot": ((4,), (4,)), "batched_vec": ((2, 3, 4), (4,)),
                           "vec_batched": ((4,), (2, 4, 3)), "bmm": ((2, 3, 4), (2, 4, 5))}.items():
        case("matmul." + name, lambda a, b: a @ b, a=randn(*sa), b=randn(*sb))


def shape_cases():
    case("transpose", lambda x: x.transpose(0, 2), x=randn(2, 3, 4))
    case("transpose_neg", lambda x: x.transpose(-1, -2), x=randn(2, 3, 4))
    case("permute", lambda x: x.permute(2, 0, 3, 1), x=randn(2, 3, 4, 5))
    case("view_infer", lambda x: x.view(-1, 6).view(3, -1, 2), x=randn(2, 3, 6))
    case("cat", lambda a, b, c: torch.cat([a, b, c], -1), a=randn(2, 3), b=randn(2, 1), c=randn(2, 2))
    case("cat0", lambda a, b: torch.cat([a, b], 0), a=randn(1, 2, 3), b=randn(2, 2, 3))
    case("stack", lambda a, b, c: torch.stack([a, b, c], 1), a=randn(3, 4), b=randn(3, 4), c=randn(3, 4))
    case("stack_last", lambda a, b: torch.stack([a, b], -1), a=randn(2, 3), b=randn(2, 3))
    pieces("split_size", lambda x: torch.split(x, 2, 0), randn(5, 6))
    pieces("split_sizes", lambda x: torch.split(x, [1, 3, 2], 1), randn(4, 6))
    pieces("chunk", lambda x: torch.chunk(x, 3, -1), randn(4, 7))
    case("index_select0", lambda x, index: x.index_select(0, index), x=randn(5, 3),
         index=torch.tensor([4, 0, 4, 2, 4]))
    case("index_select1", lambda x, index: x.index_select(1, index), x=randn(2, 4, 3), index=torch.tensor([3, 1, 3]))
    case("gather1", lambda x, index: x.gather(1, index), x=randn(3, 4),
         index=torch.tensor([[0, 0], [3, 1], [2, 2]]))
    case("gather0", lambda x, index: x.gather(0, index), x=randn(3, 4, 2),
         index=torch.randint(0, 3, (5, 3, 2), generator=G))
    case("tril", lambda x: x.tril(0), x=randn(2, 4, 5))
    case("tril_neg", lambda x: x.tril(-1), x=randn(4, 4))
    case("triu", lambda x: x.triu(1), x=randn(3, 4, 4))
    OUT_ENTRIES["tril_bool.y"] = torch.ones(4, 4, dtype=torch.bool).tril(0)
    OUT_ENTRIES["triu_bool.y"] = torch.ones(3, 5, dtype=torch.bool).triu(-1)
    OUT_ENTRIES["arange.y"] = torch.arange(7)
    OUT_ENTRIES["arange_step.y"] = torch.arange(-3, 10, 4)
    OUT_ENTRIES["arange_down.y"] = torch.arange(5, -4, -3)


def broadcast_cases():
    case("add", lambda a, b: a + b, a=randn(2, 1, 3), b=randn(4, 1))
    case("add_same", lambda a, b: a + b, a=randn(3, 4), b=randn(3, 4))
    case("sub", lambda a, b: a - b, a=randn(3, 4), b=randn(4))
    case("mul", lambda a, b: a * b, a=randn(2, 3, 1), b=randn(3, 5))
    case("div", lambda a, b: a / b, a=randn(4, 3), b=randn(1, 3).abs() + 0.5)
    case("div_scalar_tensor", lambda a, b: a / b, a=randn(2, 3), b=torch.tensor(2.5))
    # An attention score tensor [B, H, T, T] plus a [T, T] bias.
    case("attn_bias", lambda s, bias: s + bias, s=randn(2, 3, 4, 4), bias=randn(4, 4))
    a = torch.tensor([[1.0, 2.0, 3.0, -1.0], [0.5, 2.0, -3.0, 4.0], [3.0, 3.0, 3.0, 3.0]])
    b = torch.tensor([1.0, 2.0, 3.0, 4.0])
    OUT_ENTRIES["compare.a"] = a
    OUT_ENTRIES["compare.b"] = b
    for op in ["eq", "ne", "lt", "gt", "le", "ge"]:
        OUT_ENTRIES["compare." + op] = getattr(torch, op)(a, b)
    ia = torch.tensor([[1, 5, -2], [7, 0, 3]])
    ib = torch.tensor([[1], [3]])
    OUT_ENTRIES["compare_long.a"] = ia
    OUT_ENTRIES["compare_long.b"] = ib
    OUT_ENTRIES["compare_long.lt"] = ia < ib
    OUT_ENTRIES["compare_long.eq"] = ia == ib
    mask = torch.tensor([[True, False, True, True], [False, False, True, False]])
    OUT_ENTRIES["logical_not.x"] = mask
    OUT_ENTRIES["logical_not.y"] = mask.logical_not()
    case("where", lambda a, b, condition: torch.where(condition, a, b), a=randn(3, 4), b=randn(4),
         condition=torch.tensor([[True], [False], [True]]))
    case("where_bcast_a", lambda a, b, condition: torch.where(condition, a, b), a=randn(1, 4), b=randn(3, 4),
         condition=torch.tensor([True, False, False, True]))
    # The causal mask of GPT-2: scores [B, H, T, T], positions above the diagonal filled with -inf, softmax.
    causal = torch.ones(4, 4, dtype=torch.bool).tril(0)
    case("causal_softmax", lambda s, mask: s.masked_fill(mask.logical_not(), float("-inf")).softmax(-1),
         s=randn(2, 2, 4, 4), mask=causal)
    case("masked_fill", lambda x, mask: x.masked_fill(mask, 0.25), x=randn(2, 3, 4),
         mask=torch.tensor([[False, True, True, False]]))


def unary_cases():
    x = randn(3, 5)
    pos = randn(3, 5).abs() + 0.1
    case("exp", lambda x: x.exp(), x=x)
    case("log", lambda x: x.log(), x=pos)
    case("tanh", lambda x: x.tanh(), x=x)
    case("pow2", lambda x: x.pow(2), x=x)
    case("pow3", lambda x: x.pow(3.0), x=x)
    case("pow_half", lambda x: x.pow(0.5), x=pos)
    case("pow_1_5", lambda x: x.pow(1.5), x=pos)
    case("sqrt", lambda x: x.sqrt(), x=pos)
    case("neg", lambda x: x.neg(), x=x)
    case("add_scalar", lambda x: x + 0.7, x=x)
    case("mul_scalar", lambda x: x * -1.3, x=x)
    case("div_scalar", lambda x: x / 8.0, x=x)
    # GPT-2's GELU (tanh approximation) written with these ops.
    case("gelu_tanh", lambda x: 0.5 * x * (1.0 + torch.tanh(0.7978845608028654 * (x + 0.044715 * x.pow(3.0)))), x=x)


def reduce_cases():
    x = randn(2, 3, 4)
    case("softmax_last", lambda x: x.softmax(-1), x=x)
    case("softmax_mid", lambda x: x.softmax(1), x=x)
    case("log_softmax_first", lambda x: x.log_softmax(0), x=x)
    case("log_softmax_last", lambda x: x.log_softmax(-1), x=x * 10)
    case("sum_dim", lambda x: x.sum(1, keepdim=True), x=x)
    case("sum_dim_nokeep", lambda x: x.sum(-1), x=x)
    case("sum_dims", lambda x: x.sum([0, 2]), x=x)
    case("mean_dim", lambda x: x.mean(-1), x=x)
    case("mean_dims", lambda x: x.mean([0, -1], keepdim=True), x=x)
    ties = torch.tensor([[1.0, 3.0, 3.0, 0.0], [2.0, -1.0, 2.0, 2.0], [-5.0, -4.0, -6.0, -4.5]])
    case("amax", lambda x: x.amax(1), x=ties)
    case("amax_keep", lambda x: x.amax(0, keepdim=True), x=ties)
    xl = ties.clone().requires_grad_(True)
    values, indices = xl.max(1)
    gy = randn(*values.shape)
    values.backward(gy)
    OUT_ENTRIES.update({"max.x": ties, "max.values": values, "max.indices": indices, "max.gy": gy, "max.gx": xl.grad})
    xl = x.clone().requires_grad_(True)
    values, indices = xl.max(-2, keepdim=True)
    gy = randn(*values.shape)
    values.backward(gy)
    OUT_ENTRIES.update({"max_keep.x": x, "max_keep.values": values, "max_keep.indices": indices, "max_keep.gy": gy,
                        "max_keep.gx": xl.grad})


if __name__ == "__main__":
    torch.manual_seed(0)
    matmul_cases()
    shape_cases()
    broadcast_cases()
    unary_cases()
    reduce_cases()
    write("tensor_ops", OUT_ENTRIES)
