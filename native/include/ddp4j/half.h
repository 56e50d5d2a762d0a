// half.h: scalar conversions between float32 and the 16-bit floating types (bfloat16, float16),
// bit for bit as PyTorch's CPU tensors convert them (torch.Tensor.to on a CPU tensor). The
// vectorised kernels (src/cpu/convert.cpp) are checked against these on every input class.
//
// Rounding is to nearest, ties to even, with overflow to ±inf and gradual underflow (subnormal
// results, never flushed to zero). NaN is where PyTorch's paths disagree with each other, so the
// choice is spelled out: float32 NaN -> bfloat16 0xFFFF (whatever its sign and payload: what
// PyTorch's vectorised CPU conversion, which every contiguous tensor takes, writes; its scalar
// c10::BFloat16 writes 0x7FC0) and -> float16 sign | 0x7E00 (PyTorch's c10::Half, which its CPU
// tensors use). Widening is exact; a float16 NaN widens with its payload and the quiet bit set
// (as F16C's vcvtph2ps and c10::Half), a bfloat16 NaN keeps all its bits. Between the two 16-bit
// types PyTorch goes through float32 on its scalar path: one rounding, and a float16 NaN becomes
// bfloat16 0x7FC0 (c10::BFloat16's NaN).
// Host-only code with no dependencies, so that CUDA sources may include it too.
#pragma once
#include <cstdint>
#include <cstring>

namespace ddp4j {

/** The IEEE bits of f. */
inline uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

/** The float whose IEEE bits are u. */
inline float float_from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

/** bfloat16 bits of f: round to nearest even; any NaN gives 0xFFFF (see the file comment). torch.bfloat16. */
inline uint16_t float_to_bfloat16(float f) {
  const uint32_t u = float_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return 0xffff;
  // Adding 0x7fff plus the lowest kept bit rounds the 16 dropped bits to nearest, ties to even; a
  // carry out of the mantissa bumps the exponent, which is also right (up to inf).
  return static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

/** The float32 value of bfloat16 bits h (exact). */
inline float bfloat16_to_float(uint16_t h) { return float_from_bits(static_cast<uint32_t>(h) << 16); }

/** IEEE binary16 bits of f: round to nearest even, subnormals kept, overflow to inf, NaN sign|0x7E00. torch.float16. */
inline uint16_t float_to_float16(float f) {
  const uint32_t u = float_bits(f);
  const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  const uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return sign | 0x7e00;  // NaN
  // 65520 (0x477ff000) lies halfway between the largest half, 65504, and 65536; the tie goes to
  // the even neighbour 65536, which is out of range: inf from there on.
  if (a >= 0x477ff000u) return sign | 0x7c00;
  if (a >= 0x38800000u) {  // >= 2^-14: a normal half. Rebias the exponent (127 -> 15), round 13 bits away.
    const uint32_t r = a - (112u << 23);
    return sign | static_cast<uint16_t>((r + 0xfffu + ((r >> 13) & 1u)) >> 13);
  }
  if (a <= 0x33000000u) return sign;  // <= 2^-25, half the smallest subnormal: rounds (ties to even) to zero
  // A subnormal half counts units of 2^-24: the 24-bit significand m times 2^(e - 150) is m >> (126 - e)
  // units, rounded to nearest even. The result may reach 0x400, the smallest normal, which is its encoding.
  const uint32_t e = a >> 23;
  const uint32_t m = (a & 0x7fffffu) | 0x800000u;
  const uint32_t shift = 126u - e;  // 14..24
  uint32_t q = m >> shift;
  const uint32_t rest = m & ((1u << shift) - 1u);
  const uint32_t half = 1u << (shift - 1u);
  if (rest > half || (rest == half && (q & 1u))) ++q;
  return sign | static_cast<uint16_t>(q);
}

/** The float32 value of binary16 bits h (exact; a NaN keeps its payload, quietened). */
inline float float16_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t e = (h >> 10) & 0x1fu;
  const uint32_t m = h & 0x3ffu;
  if (e == 0x1f) return float_from_bits(sign | 0x7f800000u | (m << 13) | (m != 0 ? 0x400000u : 0u));
  if (e == 0) {  // zero or subnormal: m units of 2^-24, exact in float32
    const float v = static_cast<float>(m) * 5.9604644775390625e-8f;  // 2^-24
    return float_from_bits(sign | float_bits(v));
  }
  return float_from_bits(sign | ((e + 112u) << 23) | (m << 13));
}

/** bfloat16 -> float16 as PyTorch: widen exactly, round once (a NaN gives sign | 0x7E00). */
inline uint16_t bfloat16_to_float16(uint16_t h) { return float_to_float16(bfloat16_to_float(h)); }

/** float16 -> bfloat16 as PyTorch: widen exactly, round once; a NaN gives 0x7FC0. */
inline uint16_t float16_to_bfloat16(uint16_t h) {
  return (h & 0x7fffu) > 0x7c00u ? uint16_t{0x7fc0} : float_to_bfloat16(float16_to_float(h));
}

}  // namespace ddp4j
