#!/usr/bin/python3
"""Golden bits of PyTorch's bfloat16 and float16 conversions on CPU tensors (Tensor.to(dtype)),
gradients through them, how such tensors print, and a safetensors file holding them.

Writes to java/src/test/resources/golden/:
- low_precision.json:
  - cases: float32 bit patterns chosen to cover rounding ties of both formats, subnormals of both,
    the float32 subnormals, overflow to inf, infinities, NaNs with several signs and payloads,
    negative zero, plus random patterns and random values; for each (as unsigned ints) its
    bfloat16 and float16 bits, those widened back to float32, and bfloat16 -> float16 and
    float16 -> bfloat16 of the 16-bit results (one contiguous tensor per conversion, as users
    convert);
  - digests: SHA-256 (hex) of the little-endian bytes of (a) every bfloat16 and every float16 bit
    pattern 0..65535 widened to float32, (b) PyTorch's bfloat16 and float16 bits of the float32
    patterns (hi << 16) | lo for every hi in 0..65535 and each lo in LOWS, in that order;
  - gradients: y = (x.to(dtype).to(float32) * w).sum() for x float32 requiring grad: y and x.grad
    (w converted to dtype and back, as ToCopyBackward0 does), and the same from a bfloat16 leaf;
  - repr: str() of small bfloat16 and float16 tensors;
- low_precision.safetensors (and its tensors' bits in low_precision.json's "safetensors"): BF16,
  F16 and F32 tensors, metadata {"format": "pt"}, written by safetensors.torch.save_file when the
  safetensors package is installed, else by safetensors_writer.save_safetensors (same layout).

Run from anywhere:  /usr/bin/python3 scripts/golden/low_precision_golden.py   (needs python3-torch)
"""
import hashlib
import json
import os

import torch

from safetensors_writer import save_safetensors

GOLDEN = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "java", "src", "test",
                                       "resources", "golden"))

# The low halves of the digest's float32 patterns: bfloat16 ties (0x8000) and float16 ties (bit 12 and up) with
# their neighbours. Java's LowPrecisionGoldenTest builds the same list.
LOWS = [0x0000, 0x0001, 0x0fff, 0x1000, 0x1001, 0x1fff, 0x2000, 0x3000,
        0x4000, 0x7fff, 0x8000, 0x8001, 0xc000, 0xefff, 0xf000, 0xffff]

# (float32 bits, why it is here)
CASES = [
    (0x00000000, "zero"), (0x80000000, "negative zero"), (0x3f800000, "1"), (0xbf800000, "-1"),
    (0x3eaaaaab, "1/3"), (0x40490fdb, "pi"), (0x3dcccccd, "0.1"),
    (0x3f808000, "bfloat16 tie, even below"), (0x3f818000, "bfloat16 tie, even above"),
    (0x3f808001, "just above a bfloat16 tie"), (0x3f807fff, "just below a bfloat16 tie"),
    (0xbf818000, "negative bfloat16 tie"),
    (0x3f801000, "float16 tie, even below (1 + 2^-11)"), (0x3f803000, "float16 tie, even above"),
    (0x3f801001, "just above a float16 tie"), (0x3f800fff, "just below a float16 tie"),
    (0x477fe000, "65504, the largest float16"), (0x477fefff, "just below 65520"),
    (0x477ff000, "65520: float16 overflows to inf"), (0xc77ff000, "-65520"), (0x47c35000, "100000"),
    (0x7f7fffff, "FLT_MAX: bfloat16 overflows to inf"), (0xff7fffff, "-FLT_MAX"),
    (0x7f7f7fff, "just below the bfloat16 overflow tie"), (0x7f7f8000, "bfloat16 overflow tie"),
    (0x7f800000, "inf"), (0xff800000, "-inf"),
    (0x7fc00000, "quiet NaN"), (0xffc00000, "negative quiet NaN"), (0x7f800001, "signalling NaN"),
    (0x7fc00001, "NaN with a low payload"), (0x7fffffff, "NaN, all payload bits"),
    (0xff812345, "negative signalling NaN"), (0x7fa00000, "signalling NaN, high payload"),
    (0x33800000, "2^-24, the smallest float16 subnormal"), (0x33000000, "2^-25: float16 tie to zero"),
    (0x33400000, "1.5 * 2^-25"), (0x33c00000, "3 * 2^-25: float16 subnormal tie to even"),
    (0x387fc000, "the largest float16 subnormal"), (0x387fffff, "rounds up to the smallest float16 normal"),
    (0x38800000, "2^-14, the smallest float16 normal"), (0xb3800000, "-2^-24"), (0x32ffffff, "below 2^-25"),
    (0x00010000, "the smallest bfloat16 subnormal"), (0x00008000, "bfloat16 subnormal tie to zero"),
    (0x00018000, "bfloat16 subnormal tie to even"), (0x007f8000, "rounds to the smallest bfloat16 normal"),
    (0x00800000, "FLT_MIN"), (0x00000001, "the smallest float32 subnormal"),
    (0x807fffff, "the largest negative float32 subnormal"), (0x00400000, "a float32 subnormal"),
]


def f32_of_bits(bits):
    signed = [b - (1 << 32) if b >= (1 << 31) else b for b in bits]
    return torch.tensor(signed, dtype=torch.int32).view(torch.float32)


def bits32(t):
    return (t.contiguous().reshape(-1).view(torch.int32).to(torch.int64) & 0xffffffff).tolist()


def bits16(t):
    return (t.contiguous().reshape(-1).view(torch.int16).to(torch.int64) & 0xffff).tolist()


def sha256(t):
    return hashlib.sha256(t.contiguous().numpy().astype(t.numpy().dtype.newbyteorder("<")).tobytes()).hexdigest()


def all16(dtype):
    """Every 16-bit pattern 0x0000..0xffff in order, as a tensor of dtype."""
    patterns = torch.arange(0, 1 << 16, dtype=torch.int32)
    return torch.where(patterns >= 1 << 15, patterns - (1 << 16), patterns).to(torch.int16).view(dtype)


def main():
    g = torch.Generator().manual_seed(20)
    random_bits = torch.randint(0, 1 << 32, (200,), generator=g, dtype=torch.int64).tolist()
    random_values = (torch.randn(200, generator=g) * torch.pow(10.0, torch.randint(-9, 7, (200,), generator=g).float()))
    bits = [b for b, _ in CASES] + random_bits + bits32(random_values)
    x = f32_of_bits(bits)
    bf16, fp16 = x.to(torch.bfloat16), x.to(torch.float16)
    cases = {"f32": bits, "why": [w for _, w in CASES], "bf16": bits16(bf16), "fp16": bits16(fp16),
             "bf16_to_f32": bits32(bf16.to(torch.float32)), "fp16_to_f32": bits32(fp16.to(torch.float32)),
             "bf16_to_fp16": bits16(bf16.to(torch.float16)), "fp16_to_bf16": bits16(fp16.to(torch.bfloat16))}

    patterns = f32_of_bits([(hi << 16) | lo for hi in range(0x10000) for lo in LOWS])
    b16, h16 = all16(torch.bfloat16), all16(torch.float16)
    assert bits16(b16)[:3] == [0, 1, 2] and bits16(b16)[-1] == 0xffff
    digests = {"lows": LOWS,
               "bf16_all_to_f32": sha256(b16.to(torch.float32).view(torch.int32)),
               "fp16_all_to_f32": sha256(h16.to(torch.float32).view(torch.int32)),
               "f32_patterns_to_bf16": sha256(patterns.to(torch.bfloat16).view(torch.int16)),
               "f32_patterns_to_fp16": sha256(patterns.to(torch.float16).view(torch.int16))}

    xs = [0.7, -1.3, 2.0e-3, 5.0, -0.25, 1.0e-6]
    ws = [0.1, -1.0 / 3.0, 1.0e-3, 70000.0, 3.0e-6, 2.5]
    w = torch.tensor(ws)
    gradients = {"x": bits32(torch.tensor(xs)), "w": bits32(w)}
    for name, dtype in (("bf16", torch.bfloat16), ("fp16", torch.float16)):
        xt = torch.tensor(xs, requires_grad=True)
        y = (xt.to(dtype).to(torch.float32) * w).sum()
        y.backward()
        gradients[name] = {"y": bits32(y.detach().reshape(1)), "x_grad": bits32(xt.grad)}
    leaf = torch.tensor(xs).to(torch.bfloat16).requires_grad_()
    y = (leaf.to(torch.float32) * w).sum()
    y.backward()
    gradients["bf16_leaf"] = {"x": bits16(leaf.detach()), "y": bits32(y.detach().reshape(1)), "x_grad": bits16(leaf.grad)}

    repr_cases = {"bf16_vector": str(torch.tensor([1.1, 2.2]).to(torch.bfloat16)),
                  "fp16_matrix": str(torch.tensor([[0.5, 2.0], [1.0, 3.0]]).to(torch.float16)),
                  "bf16_requires_grad": str(torch.tensor([1.0, 2.5]).to(torch.bfloat16).requires_grad_())}

    # The first three values of each are finite: read_safetensors.py prints them as JSON numbers.
    tensors = {"bf16": f32_of_bits([0x3f800000, 0x3eaaaaab, 0xc0490fdb, 0x7f800000, 0x00010000, 0x80000000])
                       .reshape(2, 3).to(torch.bfloat16),
               "fp16": f32_of_bits([0x3f800000, 0x3eaaaaab, 0x33800000, 0x477ff000, 0xc77fe000]).to(torch.float16),
               "f32": torch.tensor([1.5, -2.25])}
    path = os.path.join(GOLDEN, "low_precision.safetensors")
    try:
        from safetensors.torch import save_file as official_save_file
        official_save_file(tensors, path, metadata={"format": "pt"})
    except ImportError:
        save_safetensors(tensors, path, {"format": "pt"})
    stored = {name: {"dtype": {torch.bfloat16: "BF16", torch.float16: "F16", torch.float32: "F32"}[t.dtype],
                     "shape": list(t.shape), "bits": bits16(t) if t.dtype != torch.float32 else bits32(t)}
              for name, t in tensors.items()}

    out = {"torch": torch.__version__, "cases": cases, "digests": digests, "gradients": gradients,
           "repr": repr_cases, "safetensors": stored}
    with open(os.path.join(GOLDEN, "low_precision.json"), "w") as f:
        json.dump(out, f, indent=1)
    print("wrote", os.path.join(GOLDEN, "low_precision.json"), "and", path)


if __name__ == "__main__":
    main()
