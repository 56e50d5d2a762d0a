// batch_norm_sums.h: the per-plane loops CPU batch norm is made of (batch_norm.cpp, and
// sync_batch_norm.cpp, which runs the same sums and the same affine pass with statistics reduced
// over a process group). Plane sums run in float32 lanes and are added in double; see batch_norm.cpp.
#pragma once
#include <immintrin.h>

#include <cmath>

#include <algorithm>
#include <cstdint>

#include "ddp4j/parallel.h"

namespace ddp4j::cpu::bn {

// Sums over one plane (H*W values) run in float32 across kLanes independent lanes (two AVX
// registers, written with intrinsics because GCC does not vectorise the fma lane loop); each lane
// holds only HW / kLanes terms, and lanes and planes are then added in double.
constexpr int kLanes = 16;

/** Adds the tail (in double) and then lanes 0..15 of (lo, hi) to t. */
inline double finish(__m256 lo, __m256 hi, double tail) {
  alignas(32) float lanes[kLanes];
  _mm256_store_ps(lanes, lo);
  _mm256_store_ps(lanes + 8, hi);
  for (int l = 0; l < kLanes; ++l) tail += lanes[l];
  return tail;
}

/** y > 0 ? g : 0 without a branch (ReLU's backward on one element; NaN in y blocks). */
inline float relu_mask(float g, float y) {
  return _mm_cvtss_f32(_mm_and_ps(_mm_set_ss(g), _mm_cmp_ss(_mm_set_ss(y), _mm_setzero_ps(), _CMP_GT_OQ)));
}

/** Adds Σ (p - k) to s1 and Σ (p - k)² to s2 over n floats. */
inline void shifted_sums(const float* p, int64_t n, float k, double& s1, double& s2) {
  const __m256 kk = _mm256_set1_ps(k);
  __m256 a0 = _mm256_setzero_ps(), a1 = a0, b0 = a0, b1 = a0;
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes) {
    const __m256 v0 = _mm256_sub_ps(_mm256_loadu_ps(p + j), kk);
    const __m256 v1 = _mm256_sub_ps(_mm256_loadu_ps(p + j + 8), kk);
    a0 = _mm256_add_ps(a0, v0);
    a1 = _mm256_add_ps(a1, v1);
    b0 = _mm256_fmadd_ps(v0, v0, b0);
    b1 = _mm256_fmadd_ps(v1, v1, b1);
  }
  double t1 = 0, t2 = 0;
  for (; j < n; ++j) {
    const double v = static_cast<double>(p[j]) - k;
    t1 += v;
    t2 += v * v;
  }
  s1 += finish(a0, a1, t1);
  s2 += finish(b0, b1, t2);
}

/**
 * Adds Σ g to sg and Σ (x - mean) g to sxg over n elements, where g = gy, or with Masked
 * g = (y > 0 ? gy : 0) (ReLU's backward, NaN in y blocking), then also stored to gout when not null.
 * With FromX the ReLU's output is not read: y = x * scale + shift is formed again (the forward's
 * fused multiply-add, so the same bits decide) from the x it reads anyway.
 */
template <bool Masked, bool FromX = false>
inline void grad_sums(const float* gy, const float* y, const float* x, int64_t n, float mean, double& sg,
                      double& sxg, float* gout, float scale = 0, float shift = 0) {
  const __m256 m = _mm256_set1_ps(mean);
  const __m256 zero = _mm256_setzero_ps();
  const __m256 sc = _mm256_set1_ps(scale), sh = _mm256_set1_ps(shift);
  __m256 a0 = zero, a1 = a0, b0 = a0, b1 = a0;
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes) {
    __m256 g0 = _mm256_loadu_ps(gy + j), g1 = _mm256_loadu_ps(gy + j + 8);
    if constexpr (Masked) {
      const __m256 y0 = FromX ? _mm256_fmadd_ps(_mm256_loadu_ps(x + j), sc, sh) : _mm256_loadu_ps(y + j);
      const __m256 y1 = FromX ? _mm256_fmadd_ps(_mm256_loadu_ps(x + j + 8), sc, sh) : _mm256_loadu_ps(y + j + 8);
      g0 = _mm256_and_ps(g0, _mm256_cmp_ps(y0, zero, _CMP_GT_OQ));
      g1 = _mm256_and_ps(g1, _mm256_cmp_ps(y1, zero, _CMP_GT_OQ));
      if (gout != nullptr) {
        _mm256_storeu_ps(gout + j, g0);
        _mm256_storeu_ps(gout + j + 8, g1);
      }
    }
    a0 = _mm256_add_ps(a0, g0);
    a1 = _mm256_add_ps(a1, g1);
    b0 = _mm256_fmadd_ps(_mm256_sub_ps(_mm256_loadu_ps(x + j), m), g0, b0);
    b1 = _mm256_fmadd_ps(_mm256_sub_ps(_mm256_loadu_ps(x + j + 8), m), g1, b1);
  }
  double t1 = 0, t2 = 0;
  for (; j < n; ++j) {
    float g = gy[j];
    if constexpr (Masked) {
      g = relu_mask(g, FromX ? std::fma(x[j], scale, shift) : y[j]);
      if (gout != nullptr) gout[j] = g;
    }
    t1 += g;
    t2 += (static_cast<double>(x[j]) - mean) * g;
  }
  sg += finish(a0, a1, t1);
  sxg += finish(b0, b1, t2);
}

/** Channels per statistics range: enough that each range reads about kGrainSize elements. */
inline int64_t channel_grain(int64_t N, int64_t HW) { return std::max<int64_t>(1, kGrainSize / std::max<int64_t>(N * HW, 1)); }

/** Planes per element-wise range. */
inline int64_t plane_grain(int64_t HW) { return std::max<int64_t>(1, kGrainSize / std::max<int64_t>(HW, 1)); }

/**
 * out = in * a + b over one plane of n values; with a residual res (not null) out = (in * a + b)
 * + res, and with Relu out = max(out, 0) as relu_forward (NaN kept). One expression for every
 * form, so the fused forms round as the unfused ops do. Eight lanes at a time and a masked tail,
 * so small planes (7 x 7, 3 x 3) take no branch per element; fma(in, a, b) is what the compiler
 * makes of in * a + b too.
 */
template <bool Relu, bool Residual>
inline void affine_plane(const float* in, const float* res, float* out, int64_t n, float a, float b) {
  alignas(32) static const int32_t kTail[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};
  const __m256 zero = _mm256_setzero_ps();
  const __m256 ac = _mm256_set1_ps(a), bc = _mm256_set1_ps(b);
  auto one = [&](__m256 v, __m256 rv) {
    v = _mm256_fmadd_ps(v, ac, bc);
    if constexpr (Residual) v = _mm256_add_ps(v, rv);
    // relu_forward's (v > 0 || v is NaN) ? v : 0, i.e. keep v where !(v <= 0).
    if constexpr (Relu) v = _mm256_and_ps(v, _mm256_cmp_ps(v, zero, _CMP_NLE_UQ));
    return v;
  };
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    const __m256 rv = Residual ? _mm256_loadu_ps(res + j) : zero;
    _mm256_storeu_ps(out + j, one(_mm256_loadu_ps(in + j), rv));
  }
  if (j < n) {
    const __m256i m = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(kTail + 8 - (n - j)));
    const __m256 rv = Residual ? _mm256_maskload_ps(res + j, m) : zero;
    _mm256_maskstore_ps(out + j, m, one(_mm256_maskload_ps(in + j, m), rv));
  }
}

}  // namespace ddp4j::cpu::bn
