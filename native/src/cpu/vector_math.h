// vector_math.h: exp and tanh written so that loops over them vectorise (libm's expf and tanhf
// are one call per element). Call them from loops in functions compiled for wide vectors
// (DDP4J_VECTOR_CLONES) to get AVX-512 or AVX2 code on CPUs that have it.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

/** Compiles a function for AVX-512, AVX2 and the baseline, picking one at load time by the CPU. */
#define DDP4J_VECTOR_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))

namespace ddp4j::cpu {

/**
 * exp(v) within 2 ulp of expf: Cody-Waite reduction to r in [-ln2/2, ln2/2] and a degree-6
 * polynomial, scaled by 2^k through the exponent bits. Below -87 it gives 0 (-inf included),
 * above 88 it saturates at exp(88); NaN stays NaN.
 */
__attribute__((always_inline)) inline float exp_approx(float v) {
  const bool nan = !(v == v);
  const bool zero = v < -87.0f;
  const float x = std::min(std::max(v, -87.0f), 88.0f);
  const float k = std::nearbyint(x * 1.44269504088896341f);
  const float r = (x - k * 0.693359375f) + k * 2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  int32_t bits;
  std::memcpy(&bits, &p, sizeof bits);
  bits += static_cast<int32_t>(k) * (1 << 23);
  float e;
  std::memcpy(&e, &bits, sizeof e);
  return nan ? v : zero ? 0.0f : e;
}

/**
 * tanh(u) as 1 - 2 / (exp(2u) + 1), |u| clamped at 9 (where tanh rounds to ±1): absolute error
 * about 1e-7, which is what GELU's 1 + tanh keeps.
 */
__attribute__((always_inline)) inline float tanh_approx(float u) {
  const float c = std::min(std::max(u, -9.0f), 9.0f);
  return 1.0f - 2.0f / (exp_approx(2.0f * c) + 1.0f);
}

}  // namespace ddp4j::cpu
