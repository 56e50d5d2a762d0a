// gemm_lowp.cpp: the GEMMs autocast runs (gemm.h's gemm_block): operands rounded to bfloat16 or
// float16, products and sums in float32. Two kernels, chosen at run time:
//  - Avx512Bf16 (bfloat16 on CPUs with AVX512-BF16): A and B are packed into bfloat16 pairs (the
//    packing copies anyway, so the rounding is nearly free) and a 12x32 register tile multiplies
//    them with vdpbf16ps, 2 products per float32 lane per instruction: twice the float32 FMA rate.
//  - Widen (float16 always, bfloat16 elsewhere): A and B are rounded while copied into float32
//    scratch (convert.cpp's vector conversions, the bits of Tensor.to) and one cblas_sgemm
//    multiplies them: the products of two rounded values are exact in float32, so only the sum
//    order differs from the other kernel's.
#include <cblas.h>
#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "core/settings.h"
#include "cpu/convert.h"
#include "cpu/gemm.h"
#include "ddp4j/errors.h"

namespace ddp4j::cpu {
namespace {

#define DDP4J_BF16 __attribute__((target("avx512f,avx512bw,avx512bf16")))
#ifndef DDP4J_MR
#define DDP4J_MR 12
#define DDP4J_NV 2
#endif

constexpr int kMr = DDP4J_MR;        // rows of C per register tile
constexpr int kNv = DDP4J_NV;        // zmm (16 columns) per tile row: kMr * kNv accumulators
constexpr int kNr = 16 * kNv;  // columns of C per register tile
#ifndef DDP4J_KC
#define DDP4J_KC 320
#endif
// k per packed slice at most (even): k is cut into equal slices of at most this (576 = 2 x 288,
// not 256 + 256 + 64), so that a 12 x kc A panel and a kc x 32 B panel stay in L1.
constexpr int64_t kKc = DDP4J_KC;
constexpr int64_t kMc = 144 / kMr * kMr;   // rows of A packed at once (a multiple of kMr), in L2
constexpr int64_t kNc = 1024 / kNr * kNr;  // columns of B packed at once (a multiple of kNr), in L2

bool cpu_has_bf16() {
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512bf16");
}

LowPrecisionKernel initial_kernel() {
  const std::string v = settings::get("DDP4J_CPU_BF16_KERNEL").value_or("auto");
  if (v.empty() || v == "auto") return cpu_has_bf16() ? LowPrecisionKernel::Avx512Bf16 : LowPrecisionKernel::Widen;
  if (v == "widen") return LowPrecisionKernel::Widen;
  DDP4J_CHECK_ARG(v == "avx512bf16", "DDP4J_CPU_BF16_KERNEL=", v, " is not one of auto, avx512bf16, widen");
  DDP4J_CHECK_ARG(cpu_has_bf16(), "DDP4J_CPU_BF16_KERNEL=avx512bf16 but this CPU has no AVX512-BF16 (avx512_bf16 in "
                  "/proc/cpuinfo); use auto or widen");
  return LowPrecisionKernel::Avx512Bf16;
}

std::atomic<int>& kernel_slot() {
  static std::atomic<int> slot{-1};  // -1: not read yet (a bad variable throws at the first autocast GEMM)
  return slot;
}

template <typename T>
T* grow(std::vector<T>& v, int64_t n) {
  if (static_cast<int64_t>(v.size()) < n) v.resize(static_cast<size_t>(n));
  return v.data();
}

struct Scratch {
  std::vector<float> a, b;         // Widen: the rounded copies
  std::vector<uint32_t> pa, pb;    // Avx512Bf16: packed bfloat16 pairs
};

Scratch& scratch() {
  thread_local Scratch s;
  return s;
}

// ---- Widen ------------------------------------------------------------------------------------------

/** Rounds a rows x cols block (leading dimension ld) into a dense copy; returns it. */
const float* rounded_copy(DType low, const float* src, int64_t rows, int64_t cols, int64_t ld, std::vector<float>& v) {
  float* dst = grow(v, rows * cols);
  for (int64_t r = 0; r < rows; ++r) round_to_low_precision(low, src + r * ld, dst + r * cols, cols);
  return dst;
}

void gemm_widen(DType low, bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  Scratch& s = scratch();
  // Stored shapes: A is m x k (k x m when transposed), B is k x n (n x k).
  const int64_t ar = ta ? k : m, ac = ta ? m : k, br = tb ? n : k, bc = tb ? k : n;
  const float* ra = rounded_copy(low, a, ar, ac, lda, s.a);
  const float* rb = rounded_copy(low, b, br, bc, ldb, s.b);
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, static_cast<blasint>(m),
              static_cast<blasint>(n), static_cast<blasint>(k), alpha, ra, static_cast<blasint>(ac), rb,
              static_cast<blasint>(bc), beta, c, static_cast<blasint>(ldc));
}

// ---- Avx512Bf16 -------------------------------------------------------------------------------------
// Packed layouts, for a slice of kc values of k (kp = ceil(kc / 2) pairs; an odd last pair has a
// zero second half): A panel of kMr rows: pa[p * kMr + i] = {A(i, 2p), A(i, 2p+1)}; B panel of kNr
// columns: pb[p * kNr + j] = {B(2p, j), B(2p+1, j)}. One uint32 holds a pair, low half first, as
// vdpbf16ps reads it. Rows and columns past the edge are zero.

/** 16 pairs {r0[t], r1[t]} for t < cnt (0 beyond; r1 may be null: zeros), as 16 uint32. */
DDP4J_BF16 inline __m512i interleave_rows(const float* r0, const float* r1, int cnt) {
  const __mmask16 mask = static_cast<__mmask16>((1u << cnt) - 1u);
  const __m512 x0 = _mm512_maskz_loadu_ps(mask, r0);
  const __m512 x1 = r1 != nullptr ? _mm512_maskz_loadu_ps(mask, r1) : _mm512_setzero_ps();
  const __m512i both = (__m512i)(_mm512_cvtne2ps_pbh(x1, x0));  // x0 in the low 16 halves
  alignas(64) static constexpr uint16_t kOrder[32] = {0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23,
                                                      8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31};
  return _mm512_permutexvar_epi16(_mm512_load_si512(kOrder), both);
}

/** Transposes 16 rows of 16 uint32 in place (r[i][j] -> r[j][i]). */
DDP4J_BF16 inline void transpose16(__m512i r[16]) {
  __m512i t[16], u[16], x[16];
  for (int i = 0; i < 8; ++i) {
    t[2 * i] = _mm512_unpacklo_epi32(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
  }
  for (int i = 0; i < 4; ++i) {
    u[4 * i + 0] = _mm512_unpacklo_epi64(t[4 * i], t[4 * i + 2]);
    u[4 * i + 1] = _mm512_unpackhi_epi64(t[4 * i], t[4 * i + 2]);
    u[4 * i + 2] = _mm512_unpacklo_epi64(t[4 * i + 1], t[4 * i + 3]);
    u[4 * i + 3] = _mm512_unpackhi_epi64(t[4 * i + 1], t[4 * i + 3]);
  }
  for (int c = 0; c < 4; ++c) {
    x[c] = _mm512_shuffle_i32x4(u[c], u[4 + c], 0x88);
    x[4 + c] = _mm512_shuffle_i32x4(u[c], u[4 + c], 0xdd);
    x[8 + c] = _mm512_shuffle_i32x4(u[8 + c], u[12 + c], 0x88);
    x[12 + c] = _mm512_shuffle_i32x4(u[8 + c], u[12 + c], 0xdd);
  }
  for (int c = 0; c < 8; ++c) {
    r[c] = _mm512_shuffle_i32x4(x[c], x[8 + c], 0x88);
    r[8 + c] = _mm512_shuffle_i32x4(x[c], x[8 + c], 0xdd);
  }
}

/**
 * A panel of width w (kMr or kNr) from `count` <= w rows of storage whose kc values of k are
 * contiguous (row r at src + r * ld): dst[p * w + r] = {row r's k = 2p, 2p + 1}; rows count..w are
 * zero. 16 rows at a time: each row's 32 values become 16 pairs, and a 16x16 transpose turns them
 * into 16 stores of 16 rows' pair p (vector stores instead of one store per pair).
 */
DDP4J_BF16 void pack_pairs_rows(const float* src, int64_t ld, int count, int64_t kc, uint32_t* dst, int w) {
  for (int g = 0; g < w; g += 16) {
    const int rows = std::max(0, std::min(16, count - g));
    const __mmask16 lanes = static_cast<__mmask16>(w - g >= 16 ? 0xffffu : (1u << (w - g)) - 1u);
    for (int64_t at = 0; at < kc; at += 32) {
      const int64_t len = std::min<int64_t>(32, kc - at);
      const __mmask16 m0 = static_cast<__mmask16>(len >= 16 ? 0xffffu : (1u << len) - 1u);
      const __mmask16 m1 = static_cast<__mmask16>(len >= 32 ? 0xffffu : len > 16 ? (1u << (len - 16)) - 1u : 0u);
      __m512i r[16];
      for (int j = 0; j < 16; ++j) {
        if (j < rows) {
          const float* row = src + (g + j) * ld + at;
          r[j] = (__m512i)(_mm512_cvtne2ps_pbh(_mm512_maskz_loadu_ps(m1, row + 16), _mm512_maskz_loadu_ps(m0, row)));
        } else {
          r[j] = _mm512_setzero_si512();
        }
      }
      transpose16(r);
      const int64_t pairs = (len + 1) / 2;
      uint32_t* d = dst + (at / 2) * w + g;
      for (int64_t p = 0; p < pairs; ++p) _mm512_mask_storeu_epi32(d + p * w, lanes, r[p]);
    }
  }
}

/** Packs op(A)[i0 .. i0+mc, k0 .. k0+kc) into kMr-row panels. */
DDP4J_BF16 void pack_a(bool ta, const float* a, int64_t lda, int64_t i0, int64_t mc, int64_t k0, int64_t kc,
                       uint32_t* pa) {
  const int64_t kp = (kc + 1) / 2;
  for (int64_t ib = 0; ib < mc; ib += kMr) {
    const int rows = static_cast<int>(std::min<int64_t>(kMr, mc - ib));
    uint32_t* panel = pa + ib * kp;  // kp * kMr uint32 per panel
    if (!ta) {  // A(i, kk) = a[i * lda + kk]: each row's k values are contiguous
      pack_pairs_rows(a + (i0 + ib) * lda + k0, lda, rows, kc, panel, kMr);
    } else {  // A(i, kk) = a[kk * lda + i]: interleave two rows of storage
      const __mmask16 store = static_cast<__mmask16>((1u << kMr) - 1u);
      for (int64_t p = 0; p < kp; ++p) {
        const int64_t kk = k0 + 2 * p;
        const float* r0 = a + kk * lda + i0 + ib;
        const float* r1 = 2 * p + 1 < kc ? r0 + lda : nullptr;
        _mm512_mask_storeu_epi32(panel + p * kMr, store, interleave_rows(r0, r1, rows));
      }
    }
  }
}

/** Packs op(B)[k0 .. k0+kc, j0 .. j0+nc) into kNr-column panels. */
DDP4J_BF16 void pack_b(bool tb, const float* b, int64_t ldb, int64_t j0, int64_t nc, int64_t k0, int64_t kc,
                       uint32_t* pb) {
  const int64_t kp = (kc + 1) / 2;
  for (int64_t jb = 0; jb < nc; jb += kNr) {
    const int cols = static_cast<int>(std::min<int64_t>(kNr, nc - jb));
    uint32_t* panel = pb + jb * kp;  // kp * kNr uint32 per panel
    if (tb) {  // B(kk, j) = b[j * ldb + kk]: each column's k values are contiguous
      pack_pairs_rows(b + (j0 + jb) * ldb + k0, ldb, cols, kc, panel, kNr);
    } else {  // B(kk, j) = b[kk * ldb + j]: interleave rows kk and kk + 1
      for (int64_t p = 0; p < kp; ++p) {
        const int64_t kk = k0 + 2 * p;
        const float* r0 = b + kk * ldb + j0 + jb;
        const float* r1 = 2 * p + 1 < kc ? r0 + ldb : nullptr;
        for (int v = 0; v < kNv; ++v) {
          const int left = cols - 16 * v;
          _mm512_storeu_si512(panel + p * kNr + 16 * v,
                              left > 0 ? interleave_rows(r0 + 16 * v, r1 ? r1 + 16 * v : nullptr, std::min(left, 16))
                                       : _mm512_setzero_si512());
        }
      }
    }
  }
}

/**
 * C[rows x cols] (rows <= Mr <= kMr, cols <= 16 * Nv <= kNr) = alpha * Σ_p A-panel · B-panel + beta
 * * C; beta 0 reads nothing of C (it may hold NaN garbage), as BLAS. The panels keep their full
 * kMr / kNr strides; an edge tile with few rows or columns takes a smaller Mr / Nv so that it does
 * not multiply the zero padding (same products and sums for the elements it stores).
 */
template <int Mr, int Nv>
DDP4J_BF16 void tile(int64_t kp, const uint32_t* pa, const uint32_t* pb, float* c, int64_t ldc, int rows, int cols,
                     float alpha, float beta) {
  __m512 acc[Mr][Nv];
#pragma GCC unroll 16
  for (int i = 0; i < Mr; ++i) {
#pragma GCC unroll 4
    for (int v = 0; v < Nv; ++v) acc[i][v] = _mm512_setzero_ps();
  }
  for (int64_t p = 0; p < kp; ++p) {
    __m512bh bv[Nv];
#pragma GCC unroll 4
    for (int v = 0; v < Nv; ++v) bv[v] = (__m512bh)(_mm512_loadu_si512(pb + p * kNr + 16 * v));
    const uint32_t* ap = pa + p * kMr;
#pragma GCC unroll 16
    for (int i = 0; i < Mr; ++i) {
      const __m512bh ai = (__m512bh)(_mm512_set1_epi32(static_cast<int>(ap[i])));
#pragma GCC unroll 4
      for (int v = 0; v < Nv; ++v) acc[i][v] = _mm512_dpbf16_ps(acc[i][v], ai, bv[v]);
    }
  }
  const __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);
  __mmask16 mask[Nv];
#pragma GCC unroll 4
  for (int v = 0; v < Nv; ++v) {
    const int left = cols - 16 * v;
    mask[v] = static_cast<__mmask16>(left >= 16 ? 0xffffu : left > 0 ? (1u << left) - 1u : 0u);
  }
#pragma GCC unroll 16
  for (int i = 0; i < Mr; ++i) {
    if (i >= rows) break;
    float* row = c + i * ldc;
#pragma GCC unroll 4
    for (int v = 0; v < Nv; ++v) {
      __m512 r = _mm512_mul_ps(va, acc[i][v]);
      if (beta != 0.0f) r = _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(mask[v], row + 16 * v), r);
      _mm512_mask_storeu_ps(row + 16 * v, mask[v], r);
    }
  }
}

using TileFn = void (*)(int64_t, const uint32_t*, const uint32_t*, float*, int64_t, int, int, float, float);

template <int Mr>
TileFn tile_for_cols(int cols) {
  if constexpr (kNv == 2) {
    if (cols <= 16) return tile<Mr, 1>;
  }
  return tile<Mr, kNv>;
}

/** The tile for an edge of rows x cols: full tiles, or fewer rows (4 / 8) and columns (16). */
TileFn tile_for(int rows, int cols) {
  if constexpr (kMr == 12) {
    if (rows <= 4) return tile_for_cols<4>(cols);
    if (rows <= 8) return tile_for_cols<8>(cols);
  }
  return tile_for_cols<kMr>(cols);
}

/** k per packed slice: k cut into equal even slices of at most kKc (the last one shorter). */
int64_t slice_step(int64_t k) {
  const int64_t slices = (k + kKc - 1) / kKc;
  return ((k + slices - 1) / slices + 1) / 2 * 2;
}

/** Rows of A rounded up to whole kMr panels. */
int64_t panel_rows(int64_t m) { return (m + kMr - 1) / kMr * kMr; }

/**
 * uint32 of all of op(A) packed: slice k0 (even) at panel_rows(m) * (k0 / 2), its rows i at
 * i * kp within, the layout pack_a gives one block.
 */
int64_t packed_a_size(int64_t m, int64_t k) {
  const int64_t step = slice_step(k), last = (k - 1) / step * step;
  return panel_rows(m) * (last / 2 + (k - last + 1) / 2);
}

/** Packs all of op(A) (packed_a_size uint32) for gemm_bf16's `whole`. */
DDP4J_BF16 void pack_a_whole(bool ta, const float* a, int64_t lda, int64_t m, int64_t k, uint32_t* dst) {
  const int64_t step = slice_step(k);
  for (int64_t k0 = 0; k0 < k; k0 += step) pack_a(ta, a, lda, 0, m, k0, std::min(step, k - k0), dst + panel_rows(m) * (k0 / 2));
}

/**
 * prepacked: all of op(A) packed by pack_a_whole, or null: A is packed block by block here (and
 * kept whole when n spans several column blocks, so that it is packed once, not once per block).
 */
DDP4J_BF16 void gemm_bf16(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                          int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc,
                          const uint32_t* prepacked = nullptr) {
  Scratch& s = scratch();
  const int64_t nc_max = std::min(kNc, (n + kNr - 1) / kNr * kNr);
  const int64_t mc_max = std::min(kMc, panel_rows(m));
  const int64_t step = slice_step(k), mr = panel_rows(m);
  uint32_t* pb = grow(s.pb, nc_max * (kKc / 2));
  uint32_t* whole = prepacked == nullptr && n > kNc ? grow(s.pa, packed_a_size(m, k)) : nullptr;
  uint32_t* pa = prepacked == nullptr && whole == nullptr ? grow(s.pa, mc_max * (kKc / 2)) : nullptr;
  for (int64_t j0 = 0; j0 < n; j0 += kNc) {
    const int64_t nc = std::min(kNc, n - j0);
    for (int64_t k0 = 0; k0 < k; k0 += step) {
      const int64_t kc = std::min(step, k - k0), kp = (kc + 1) / 2;
      const float slice_beta = k0 == 0 ? beta : 1.0f;  // later slices add to what the first wrote
      pack_b(tb, b, ldb, j0, nc, k0, kc, pb);
      for (int64_t i0 = 0; i0 < m; i0 += kMc) {
        const int64_t mc = std::min(kMc, m - i0);
        const uint32_t* pai;
        if (prepacked != nullptr) {
          pai = prepacked + mr * (k0 / 2) + i0 * kp;
        } else if (whole != nullptr) {  // packed while the first column block passes, read by the others
          uint32_t* dst = whole + mr * (k0 / 2) + i0 * kp;
          if (j0 == 0) pack_a(ta, a, lda, i0, mc, k0, kc, dst);
          pai = dst;
        } else {
          pack_a(ta, a, lda, i0, mc, k0, kc, pa);
          pai = pa;
        }
        for (int64_t jb = 0; jb < nc; jb += kNr) {
          const int cols = static_cast<int>(std::min<int64_t>(kNr, nc - jb));
          for (int64_t ib = 0; ib < mc; ib += kMr) {
            const int rows = static_cast<int>(std::min<int64_t>(kMr, mc - ib));
            const TileFn fn = rows == kMr && cols == kNr ? tile<kMr, kNv> : tile_for(rows, cols);
            fn(kp, pai + ib * kp, pb + jb * kp, c + (i0 + ib) * ldc + j0 + jb, ldc, rows, cols, alpha, slice_beta);
          }
        }
      }
    }
  }
}

}  // namespace

bool bf16_kernel_supported(LowPrecisionKernel kernel) {
  return kernel == LowPrecisionKernel::Widen || cpu_has_bf16();
}

LowPrecisionKernel bf16_kernel() {
  int v = kernel_slot().load(std::memory_order_relaxed);
  if (v < 0) {
    v = static_cast<int>(initial_kernel());
    kernel_slot().store(v, std::memory_order_relaxed);
  }
  return static_cast<LowPrecisionKernel>(v);
}

void set_bf16_kernel(LowPrecisionKernel kernel) {
  DDP4J_CHECK_ARG(bf16_kernel_supported(kernel), "autocast: this CPU cannot run the ", bf16_kernel_name(kernel),
                  " kernel (no AVX512-BF16); use widen");
  kernel_slot().store(static_cast<int>(kernel), std::memory_order_relaxed);
}

const char* bf16_kernel_name(LowPrecisionKernel kernel) {
  return kernel == LowPrecisionKernel::Avx512Bf16 ? "avx512bf16" : "widen";
}

void gemm_block(DType compute, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  if (m <= 0 || n <= 0) return;
  if (compute == DType::Float32 || k <= 0) {
    cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans,
                static_cast<blasint>(m), static_cast<blasint>(n), static_cast<blasint>(k), alpha, a,
                static_cast<blasint>(lda), b, static_cast<blasint>(ldb), beta, c, static_cast<blasint>(ldc));
    return;
  }
  DDP4J_CHECK_ARG(compute == DType::BFloat16 || compute == DType::Float16,
                  "gemm: compute dtype must be float32, bfloat16 or float16, got ", dtype_name(compute));
  if (compute == DType::BFloat16 && bf16_kernel() == LowPrecisionKernel::Avx512Bf16) {
    gemm_bf16(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  } else {
    gemm_widen(compute, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  }
}

PackedA::PackedA(DType compute, bool trans_a, int64_t m, int64_t k, const float* a, int64_t lda)
    : compute_(compute), trans_a_(trans_a), m_(m), k_(k), lda_(lda), a_(a) {
  if (compute == DType::BFloat16 && m > 0 && k > 0 && bf16_kernel() == LowPrecisionKernel::Avx512Bf16) {
    packed_.resize(static_cast<size_t>(packed_a_size(m, k)));
    pack_a_whole(trans_a, a, lda, m, k, packed_.data());
  }
}

void PackedA::gemm(bool trans_b, int64_t n, float alpha, const float* b, int64_t ldb, float beta, float* c,
                   int64_t ldc) const {
  if (packed_.empty() || n <= 0) {
    gemm_block(compute_, trans_a_, trans_b, m_, n, k_, alpha, a_, lda_, b, ldb, beta, c, ldc);
  } else {
    gemm_bf16(trans_a_, trans_b, m_, n, k_, alpha, a_, lda_, b, ldb, beta, c, ldc, packed_.data());
  }
}

}  // namespace ddp4j::cpu
