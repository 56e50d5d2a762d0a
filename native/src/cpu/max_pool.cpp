// CPU MaxPool2d: one pass over each output window, saving the flat h*W+w index of the maximum
// (as torch.nn.functional.max_pool2d(return_indices=True)); the backward scatter-adds into those
// positions, so overlapping windows (stride < kernel) accumulate. Both run parallel_for over whole
// planes (n, c), so results do not depend on the thread count. The 2x2 stride-2 pool and ResNet's
// 3x3 stride-2 stem pool have vector paths (max_pool.h: AVX-512, and AVX2 for the stem pool) that
// take the scalar loops' taps in the same order, so every path gives the same values and indices.
#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>

#include "cpu/max_pool.h"
#include "ddp4j/dispatch.h"
#include "ddp4j/errors.h"
#include "ddp4j/kernels.h"
#include "ddp4j/parallel.h"

namespace ddp4j::cpu {
namespace {

/** Keeps the running maximum: a later value wins if larger, or if it is NaN (PyTorch's rule). */
inline void consider(float v, int64_t index, float& best, int64_t& best_index) {
  const bool take = v > best || v != v;
  best = take ? v : best;
  best_index = take ? index : best_index;
}

/** The common 2x2, stride 2, no padding case: the window is always inside the plane. */
void forward_2x2(const float* px, float* py, int64_t* pi, int64_t planes, int64_t H, int64_t W, int64_t P, int64_t Q) {
  for (int64_t plane = 0; plane < planes; ++plane) {
    const float* in = px + plane * H * W;
    for (int64_t p = 0; p < P; ++p) {
      const float* r0 = in + 2 * p * W;
      const float* r1 = r0 + W;
      const int64_t base = 2 * p * W;
      for (int64_t q = 0; q < Q; ++q) {
        const int64_t w = 2 * q;
        float best = r0[w];
        int64_t best_index = base + w;
        consider(r0[w + 1], base + w + 1, best, best_index);
        consider(r1[w], base + W + w, best, best_index);
        consider(r1[w + 1], base + W + w + 1, best, best_index);
        *py++ = best;
        *pi++ = best_index;
      }
    }
  }
}

#define DDP4J_AVX512 __attribute__((target("avx512f")))

/**
 * forward_2x2 with AVX-512, 16 windows per step: the even and odd columns of both input rows are
 * separated with two-source permutes, then the four candidates are taken in the scalar order
 * (r0[w], r0[w+1], r1[w], r1[w+1]) with the same "larger or NaN wins" rule.
 */
DDP4J_AVX512 void forward_2x2_avx512(const float* px, float* py, int64_t* pi, int64_t planes, int64_t H, int64_t W,
                                     int64_t P, int64_t Q) {
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
  const __m512i lane2 = even;  // 2 * lane
  const float* end = px + planes * H * W;
  const float* py_end = py + planes * P * Q;
  for (int64_t plane = 0; plane < planes; ++plane) {
    const float* in = px + plane * H * W;
    for (int64_t p = 0; p < P; ++p) {
      const float* r0 = in + 2 * p * W;
      const float* r1 = r0 + W;
      for (int64_t q0 = 0; q0 < Q; q0 += 16) {
        const int64_t m = std::min<int64_t>(16, Q - q0), n = 2 * m;
        const __mmask16 lo_mask = static_cast<__mmask16>(n >= 16 ? 0xFFFF : (1u << n) - 1);
        const __mmask16 hi_mask = static_cast<__mmask16>(n <= 16 ? 0 : (1u << (n - 16)) - 1);
        const __mmask16 out_mask = static_cast<__mmask16>(m == 16 ? 0xFFFF : (1u << m) - 1);
        const float* a = r0 + 2 * q0;
        const float* b = r1 + 2 * q0;
        // Whole-vector loads where all 32 floats lie inside x (lanes past the window row are
        // never stored); masked loads only near the end of x.
        const bool whole = b + 32 <= end;
        const __m512 a_lo = whole ? _mm512_loadu_ps(a) : _mm512_maskz_loadu_ps(lo_mask, a);
        const __m512 a_hi = whole ? _mm512_loadu_ps(a + 16) : _mm512_maskz_loadu_ps(hi_mask, a + 16);
        const __m512 b_lo = whole ? _mm512_loadu_ps(b) : _mm512_maskz_loadu_ps(lo_mask, b);
        const __m512 b_hi = whole ? _mm512_loadu_ps(b + 16) : _mm512_maskz_loadu_ps(hi_mask, b + 16);
        __m512 best = _mm512_permutex2var_ps(a_lo, even, a_hi);
        __m512i off = _mm512_setzero_si512();
        const __m512 cand[3] = {_mm512_permutex2var_ps(a_lo, odd, a_hi), _mm512_permutex2var_ps(b_lo, even, b_hi),
                                _mm512_permutex2var_ps(b_lo, odd, b_hi)};
        const __m512i cand_off[3] = {_mm512_set1_epi32(1), _mm512_set1_epi32(static_cast<int>(W)),
                                     _mm512_set1_epi32(static_cast<int>(W + 1))};
        for (int i = 0; i < 3; ++i) {
          const __mmask16 take = _mm512_cmp_ps_mask(cand[i], best, _CMP_GT_OQ) |
                                 _mm512_cmp_ps_mask(cand[i], cand[i], _CMP_UNORD_Q);
          best = _mm512_mask_mov_ps(best, take, cand[i]);
          off = _mm512_mask_mov_epi32(off, take, cand_off[i]);
        }
        const __m512i idx = _mm512_add_epi32(_mm512_add_epi32(off, lane2),
                                             _mm512_set1_epi32(static_cast<int>(2 * p * W + 2 * q0)));
        const __m512i i_lo = _mm512_maskz_cvtepi32_epi64(0xFF, _mm512_maskz_extracti64x4_epi64(0xFF, idx, 0));
        const __m512i i_hi = _mm512_maskz_cvtepi32_epi64(0xFF, _mm512_maskz_extracti64x4_epi64(0xFF, idx, 1));
        if (py + q0 + 16 <= py_end) {
          // Whole vectors: lanes past the row land on outputs that later windows overwrite.
          _mm512_storeu_ps(py + q0, best);
          _mm512_storeu_si512(pi + q0, i_lo);
          _mm512_storeu_si512(pi + q0 + 8, i_hi);
        } else {
          _mm512_mask_storeu_ps(py + q0, out_mask, best);
          _mm512_mask_storeu_epi64(pi + q0, static_cast<__mmask8>(out_mask & 0xFF), i_lo);
          _mm512_mask_storeu_epi64(pi + q0 + 8, static_cast<__mmask8>(out_mask >> 8), i_hi);
        }
      }
      py += Q;
      pi += Q;
    }
  }
}

/** Planes per parallel_for grain: about 32K input elements of work each. */
int64_t plane_grain(int64_t plane_elems) { return std::max<int64_t>(1, 32768 / std::max<int64_t>(plane_elems, 1)); }

/**
 * One output (p, q) of any geometry (dilation, padding, ceil mode), as PyTorch's CPU kernel: the
 * window's taps are h0 + k * dilation_h below min(h0 + (kernel_h - 1) * dilation_h + 1, H), with h0
 * moved past the padding by whole dilation steps; padding counts as -inf; the first maximum wins
 * and NaN propagates.
 */
template <bool kDilated>
inline void window_general(const float* in, int64_t H, int64_t W, int64_t p, int64_t q, const kernels::Pool2dGeometry& g,
                           float* py, int64_t* pi) {
  // Dilation 1 (the usual case) as a constant, so the inner loops keep unit strides.
  const int64_t dh = kDilated ? g.dilation_h : 1, dw = kDilated ? g.dilation_w : 1;
  int64_t h0 = p * g.stride_h - g.pad_h;
  const int64_t h1 = std::min<int64_t>(h0 + int64_t{g.kernel_h - 1} * dh + 1, H);
  while (h0 < 0) h0 += dh;
  int64_t w0 = q * g.stride_w - g.pad_w;
  const int64_t w1 = std::min<int64_t>(w0 + int64_t{g.kernel_w - 1} * dw + 1, W);
  while (w0 < 0) w0 += dw;
  float best = -std::numeric_limits<float>::infinity();
  int64_t best_index = h0 * W + w0;
  for (int64_t h = h0; h < h1; h += dh) {
    for (int64_t w = w0; w < w1; w += dw) {
      const float v = in[h * W + w];
      if (v > best || std::isnan(v)) {
        best = v;
        best_index = h * W + w;
      }
    }
  }
  *py = best;
  *pi = best_index;
}

/** window_general over every output of the planes. */
template <bool kDilated>
void forward_general(const float* px, float* py, int64_t* pi, int64_t planes, int64_t H, int64_t W, int64_t P,
                     int64_t Q, const kernels::Pool2dGeometry& g) {
  for (int64_t plane = 0; plane < planes; ++plane) {
    const float* in = px + plane * H * W;
    for (int64_t p = 0; p < P; ++p) {
      for (int64_t q = 0; q < Q; ++q) window_general<kDilated>(in, H, W, p, q, g, py++, pi++);
    }
  }
}

/**
 * ResNet's stem pool (3x3, stride 2, padding 1), over the planes and rows: in a row whose windows
 * lie inside the plane's rows, windows 1, 2, ... go Block::kWidth at a time through Block::run as
 * long as the block's loads (columns 2q - 1 .. 2q + 2 kWidth) stay in the row; the rest (the
 * first and last rows and columns, where the window leaves the plane, and a row's last few
 * windows) go through window_general. Block::run takes the nine taps in window_general's order
 * with its "larger or NaN wins" rule, so every path gives window_general's values and indices.
 */
template <typename Block>
void forward_3x3s2(const float* px, float* py, int64_t* pi, int64_t planes, int64_t H, int64_t W, int64_t P,
                   int64_t Q, const kernels::Pool2dGeometry& g) {
  constexpr int64_t n = Block::kWidth;
  for (int64_t plane = 0; plane < planes; ++plane) {
    const float* in = px + plane * H * W;
    for (int64_t p = 0; p < P; ++p) {
      float* yrow = py + p * Q;
      int64_t* irow = pi + p * Q;
      const bool inside_rows = p >= 1 && 2 * p + 1 < H;
      int64_t q = 0;
      if (inside_rows) {
        window_general<false>(in, H, W, p, 0, g, yrow, irow);
        for (q = 1; q + n <= Q && 2 * q + 2 * n < W; q += n) Block::run(in, W, p, q, yrow + q, irow + q);
      }
      for (; q < Q; ++q) window_general<false>(in, H, W, p, q, g, yrow + q, irow + q);
    }
    py += P * Q;
    pi += P * Q;
  }
}

/**
 * 16 stem-pool windows q..q+15 of output row p with AVX-512: each input row's left, centre and
 * right taps of the 16 windows are the even and odd lanes of two-source permutes of the row.
 */
struct StemBlockAvx512 {
  static constexpr int64_t kWidth = 16;

  DDP4J_AVX512 static void run(const float* in, int64_t W, int64_t p, int64_t q, float* y, int64_t* indices) {
    const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
    __m512 best = _mm512_setzero_ps();
    __m512i index = _mm512_setzero_si512();
    const __m512i lane_col = _mm512_add_epi32(even, _mm512_set1_epi32(static_cast<int>(2 * q)));  // 2 (q + j)
    bool first = true;
    for (int64_t dh = -1; dh <= 1; ++dh) {
      const int64_t h = 2 * p + dh;
      const float* row = in + h * W + 2 * q - 1;
      const __m512 a_lo = _mm512_loadu_ps(row), a_hi = _mm512_loadu_ps(row + 16);
      const __m512 b_lo = _mm512_loadu_ps(row + 2), b_hi = _mm512_loadu_ps(row + 18);
      const __m512 taps[3] = {_mm512_permutex2var_ps(a_lo, even, a_hi), _mm512_permutex2var_ps(a_lo, odd, a_hi),
                              _mm512_permutex2var_ps(b_lo, even, b_hi)};
      const __m512i row_base = _mm512_add_epi32(lane_col, _mm512_set1_epi32(static_cast<int>(h * W)));
      for (int dw = -1; dw <= 1; ++dw) {
        const __m512 v = taps[dw + 1];
        const __m512i vi = _mm512_add_epi32(row_base, _mm512_set1_epi32(dw));
        if (first) {  // the first tap: as window_general's -inf start, which any value but -inf beats
          best = v;
          index = vi;
          first = false;
          continue;
        }
        const __mmask16 take = _mm512_cmp_ps_mask(v, best, _CMP_GT_OQ) | _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
        best = _mm512_mask_mov_ps(best, take, v);
        index = _mm512_mask_mov_epi32(index, take, vi);
      }
    }
    _mm512_storeu_ps(y, best);
    // The masked forms, as in forward_2x2_avx512: gcc 12 warns about the plain ones' undefined lanes.
    _mm512_storeu_si512(indices, _mm512_maskz_cvtepi32_epi64(0xFF, _mm512_maskz_extracti64x4_epi64(0xFF, index, 0)));
    _mm512_storeu_si512(indices + 8, _mm512_maskz_cvtepi32_epi64(0xFF, _mm512_maskz_extracti64x4_epi64(0xFF, index, 1)));
  }
};

#define DDP4J_AVX2 __attribute__((target("avx2")))

/** [lo0 lo2 lo4 lo6 hi0 hi2 hi4 hi6] (kOdd = false) or the odd lanes (kOdd = true). */
template <bool kOdd>
DDP4J_AVX2 inline __m256 deinterleave(__m256 lo, __m256 hi) {
  const __m256 t = kOdd ? _mm256_shuffle_ps(lo, hi, _MM_SHUFFLE(3, 1, 3, 1)) : _mm256_shuffle_ps(lo, hi, _MM_SHUFFLE(2, 0, 2, 0));
  return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(t), _MM_SHUFFLE(3, 1, 2, 0)));
}

/** StemBlockAvx512 for CPUs with AVX2 only: 8 windows, the same taps in the same order with the same rule. */
struct StemBlockAvx2 {
  static constexpr int64_t kWidth = 8;

  DDP4J_AVX2 static void run(const float* in, int64_t W, int64_t p, int64_t q, float* y, int64_t* indices) {
    const __m256i lane2 = _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14);
    __m256 best = _mm256_setzero_ps();
    __m256i index = _mm256_setzero_si256();
    const __m256i lane_col = _mm256_add_epi32(lane2, _mm256_set1_epi32(static_cast<int>(2 * q)));  // 2 (q + j)
    bool first = true;
    for (int64_t dh = -1; dh <= 1; ++dh) {
      const int64_t h = 2 * p + dh;
      const float* row = in + h * W + 2 * q - 1;
      const __m256 a_lo = _mm256_loadu_ps(row), a_hi = _mm256_loadu_ps(row + 8);
      const __m256 b_lo = _mm256_loadu_ps(row + 2), b_hi = _mm256_loadu_ps(row + 10);
      const __m256 taps[3] = {deinterleave<false>(a_lo, a_hi), deinterleave<true>(a_lo, a_hi),
                              deinterleave<false>(b_lo, b_hi)};
      const __m256i row_base = _mm256_add_epi32(lane_col, _mm256_set1_epi32(static_cast<int>(h * W)));
      for (int dw = -1; dw <= 1; ++dw) {
        const __m256 v = taps[dw + 1];
        const __m256i vi = _mm256_add_epi32(row_base, _mm256_set1_epi32(dw));
        if (first) {  // as in StemBlockAvx512
          best = v;
          index = vi;
          first = false;
          continue;
        }
        const __m256 take = _mm256_or_ps(_mm256_cmp_ps(v, best, _CMP_GT_OQ), _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
        best = _mm256_blendv_ps(best, v, take);
        index = _mm256_castps_si256(_mm256_blendv_ps(_mm256_castsi256_ps(index), _mm256_castsi256_ps(vi), take));
      }
    }
    _mm256_storeu_ps(y, best);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(indices), _mm256_cvtepi32_epi64(_mm256_castsi256_si128(index)));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(indices + 4), _mm256_cvtepi32_epi64(_mm256_extracti128_si256(index, 1)));
  }
};

PoolPath best_path() {
  if (__builtin_cpu_supports("avx512f")) return PoolPath::Avx512;
  if (__builtin_cpu_supports("avx2")) return PoolPath::Avx2;
  return PoolPath::Scalar;
}

std::atomic<PoolPath>& path_slot() {
  static std::atomic<PoolPath> path{best_path()};
  return path;
}

void forward(const Tensor& x, Tensor& y, Tensor& indices, const kernels::Pool2dGeometry& g) {
  const int64_t planes = x.size(0) * x.size(1), H = x.size(2), W = x.size(3), P = y.size(2), Q = y.size(3);
  const float* px = x.data<float>();
  float* py = y.data<float>();
  int64_t* pi = indices.data<int64_t>();
  // The 2x2 fast path needs every window inside the plane (ceil mode can add a partial last one).
  const bool fast_2x2 = g.kernel_h == 2 && g.kernel_w == 2 && g.stride_h == 2 && g.stride_w == 2 && g.pad_h == 0 &&
                        g.pad_w == 0 && g.dilation_h == 1 && g.dilation_w == 1 && 2 * P <= H && 2 * Q <= W;
  // Plane-local indices fit the vector paths' int32 lanes up to 2^31 elements per plane.
  const PoolPath path = H * W < (int64_t{1} << 31) ? pool_path() : PoolPath::Scalar;
  const bool vector = fast_2x2 && path == PoolPath::Avx512;
  const bool stem_3x3 = g.kernel_h == 3 && g.kernel_w == 3 && g.stride_h == 2 && g.stride_w == 2 && g.pad_h == 1 &&
                        g.pad_w == 1 && g.dilation_h == 1 && g.dilation_w == 1 && path != PoolPath::Scalar;
  // Whole planes per call: each output is computed by one call, whatever the thread count.
  parallel_for(0, planes, plane_grain(H * W), [&](int64_t begin, int64_t end) {
    const float* x0 = px + begin * H * W;
    float* y0 = py + begin * P * Q;
    int64_t* i0 = pi + begin * P * Q;
    if (vector) {
      forward_2x2_avx512(x0, y0, i0, end - begin, H, W, P, Q);
    } else if (stem_3x3) {
      (path == PoolPath::Avx512 ? forward_3x3s2<StemBlockAvx512> : forward_3x3s2<StemBlockAvx2>)(x0, y0, i0, end - begin, H,
                                                                                     W, P, Q, g);
    } else if (fast_2x2) {
      forward_2x2(x0, y0, i0, end - begin, H, W, P, Q);
    } else {
      const bool dilated = g.dilation_h != 1 || g.dilation_w != 1;
      (dilated ? forward_general<true> : forward_general<false>)(x0, y0, i0, end - begin, H, W, P, Q, g);
    }
  });
}

void backward(const Tensor& gy, const Tensor& indices, Tensor& gx) {
  const int64_t planes = gx.size(0) * gx.size(1), HW = gx.size(2) * gx.size(3), PQ = gy.size(2) * gy.size(3);
  const float* pgy = gy.data<float>();
  const int64_t* pi = indices.data<int64_t>();
  float* pgx = gx.data<float>();
  parallel_for(0, planes, plane_grain(HW), [&](int64_t begin, int64_t end) {
    for (int64_t plane = begin; plane < end; ++plane) {
      float* out = pgx + plane * HW;
      std::fill_n(out, HW, 0.f);
      for (int64_t j = 0; j < PQ; ++j) {
        const int64_t idx = pi[plane * PQ + j];
        // Indices come from Java and could be anything: never write outside the plane.
        DDP4J_CHECK_ARG(idx >= 0 && idx < HW, "max_pool2d_backward: index ", idx, " is outside the ", gx.size(2), "x",
                        gx.size(3), " input plane");
        out[idx] += pgy[plane * PQ + j];
      }
    }
  });
}

}  // namespace

PoolPath pool_path() { return path_slot().load(std::memory_order_relaxed); }

bool pool_path_supported(PoolPath path) {
  switch (path) {
    case PoolPath::Scalar: return true;
    case PoolPath::Avx2: return __builtin_cpu_supports("avx2");
    case PoolPath::Avx512: return __builtin_cpu_supports("avx512f");
  }
  return false;
}

void set_pool_path(PoolPath path) {
  DDP4J_CHECK_ARG(pool_path_supported(path), "max_pool2d: this CPU cannot run the ",
                  path == PoolPath::Avx512 ? "avx512" : "avx2", " path");
  path_slot().store(path, std::memory_order_relaxed);
}

DDP4J_REGISTER_KERNEL(max_pool2d_forward, CPU, forward);
DDP4J_REGISTER_KERNEL(max_pool2d_backward, CPU, backward);

}  // namespace ddp4j::cpu
