// CPU Conv2d (any stride, padding, dilation and groups): OpenBLAS GEMMs over unfolded inputs,
// split over the intra-op threads so that every result is bit-identical for any thread count.
//
// Per group g (input channels [g*Cg, (g+1)*Cg), output channels [g*Kg, (g+1)*Kg)) the forward is
// y_g[Kg, PQ] = W_g[Kg, Cg*R*S] · col_g[Cg*R*S, PQ], where col is the unfolded input (im2col). A
// 1x1 stride-1 unpadded convolution needs no unfolding: an NCHW image already is the [C, HW]
// matrix, and gy[n] the [K, PQ] one, so its GEMMs read and write the tensors as they are.
//
//  - forward: (image, block of output rows) units, one thread each; the unfolded block stays in
//    cache and the GEMM writes straight into y.
//  - input gradient: one image per unit: gcol = W_gᵀ · gy-block, folded back (col2im) in block
//    order; pointwise: gx[n] = W_gᵀ · gy[n] directly.
//  - very small outputs (7x7): forward and input gradient as the weight gradient below, on batch
//    chunks side by side, in fixed blocks of y' = W · col and gcol = Wᵀ · gy'.
//  - weight gradient, large outputs (early ResNet layers, small weights): fixed chunks of images
//    (their count depends on the shapes only), each summing gy · colᵀ into a partial of its own;
//    the partials are added in chunk order.
//  - weight gradient, small outputs (14x14, 7x7 with large weights, where per-image GEMMs are
//    thin and partials big): batch chunks of images are unfolded side by side into
//    col[C*R*S, m*PQ] and gy laid out as [K, m*PQ], then gW is cut into fixed blocks, one thread
//    per block, accumulating the batch chunks in order.
//
// Each output element is thus computed by one GEMM call or one fixed chunk, in an order fixed by
// the shapes. OpenBLAS is called from our threads and must itself run single-threaded.
// Stride-1 dense convolutions take the direct AVX-512 kernels of conv_direct.cpp where they apply
// (forward: K >= 8; backward: few channels), except under autocast: every GEMM then rounds its
// operands to bfloat16 / float16 while it packs them (gemm.h's gemm_block, fp32 accumulation).
#include <cblas.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "cpu/conv_direct.h"
#include "cpu/gemm.h"
#include "ddp4j/dispatch.h"
#include "ddp4j/kernels.h"
#include "ddp4j/parallel.h"

namespace ddp4j::cpu {
namespace {

// Outputs with fewer pixels than this per image take the batched weight gradient: one image
// alone would give GEMMs with fewer than kSmallPQ terms per sum.
constexpr int64_t kSmallPQ = 256;
// Outputs with fewer pixels than this (7x7) also take the batched forward and input gradient: a
// GEMM per image would be so thin that packing W for it costs ~25% of the time (ResNet's 7x7
// layers: ~65 -> ~78 GFLOP/s forward on one core); at 14x14 both plans measured the same.
constexpr int64_t kThinPQ = 128;
// Output rows per block such that the unfolded block holds at most this many floats (1 MiB,
// about one core's L2), but at least kMinBlockCols columns and one row.
constexpr int64_t kBlockColFloats = int64_t{1} << 18;
constexpr int64_t kMinBlockCols = 256;
// Per-image weight gradient: at most this many chunks of images, each with its own partial, and
// at most kPartialFloats floats of partials in all (at least one chunk).
constexpr int64_t kMaxWeightChunks = 16;
constexpr int64_t kPartialFloats = int64_t{1} << 22;
// Batched weight gradient: images per batch chunk such that col[C*R*S, m*PQ] holds at most this
// many floats (16 MiB; at least one image), and the gW block each thread computes.
constexpr int64_t kBatchColFloats = int64_t{1} << 22;
constexpr int64_t kGwBlock = 128;  // rows (output channels) and columns (C*R*S) per gW block
// Batched forward and input gradient: GEMM output rows (channels or C*R*S) x columns (pixels of
// the batch chunk) per block. W's block is packed once per block instead of once per image.
constexpr int64_t kBatchBlockRows = 256;
constexpr int64_t kBatchBlockCols = 256;
// Under autocast the blocks are larger: the bfloat16 GEMM packs (and rounds) both operands of every
// call, so small blocks repack each operand once per block of the other (a 128 x 128 gW block packs
// 256 values per 128 x 128 products: ~1/3 of the time), while its sums do not depend on the block.
constexpr int64_t kLowpBlockRows = 512;
constexpr int64_t kLowpBlockCols = 512;

/** Rows and columns per fixed block of the batched GEMMs: (fp32 rows, fp32 cols) or the autocast ones. */
int64_t block_rows_for(DType compute, int64_t fp32) { return compute == DType::Float32 ? fp32 : kLowpBlockRows; }
int64_t block_cols_for(DType compute, int64_t fp32) { return compute == DType::Float32 ? fp32 : kLowpBlockCols; }

/** Private to one thread: its unfolded block. */
struct ThreadWorkspace {
  std::vector<float> col;
};

ThreadWorkspace& thread_workspace() {
  thread_local ThreadWorkspace ws;
  return ws;
}

/** Owned by the calling thread, shared with the workers of one call. */
struct CallWorkspace {
  std::vector<float> col;       // batched weight gradient: [C*R*S, m*PQ]
  std::vector<float> tmp;       // batched weight gradient: gy' as [K, m*PQ]
  std::vector<float> partials;  // per-image weight gradient: [chunks, K*Cg*R*S]
};

CallWorkspace& call_workspace() {
  thread_local CallWorkspace ws;
  return ws;
}

template <typename T>
T* grow(std::vector<T>& v, int64_t n) {
  if (static_cast<int64_t>(v.size()) < n) v.resize(static_cast<size_t>(n));
  return v.data();
}

struct Dims {
  int64_t N, C, H, W, K, R, S, P, Q;
  int64_t sh, sw, ph, pw, dh, dw, G;
  DType compute;  // autocast's dtype (gemm.h's gemm_block), Float32 outside autocast
  int64_t cg() const { return C / G; }
  int64_t kg() const { return K / G; }
  int64_t crs() const { return cg() * R * S; }  // GEMM depth of one group
  int64_t pq() const { return P * Q; }
  int64_t hw() const { return H * W; }
  int64_t chw() const { return C * H * W; }
  /** 1x1, stride 1, no padding: the image is its own unfolding ([C, HW], P = H, Q = W). */
  bool pointwise() const { return R == 1 && S == 1 && sh == 1 && sw == 1 && ph == 0 && pw == 0; }
};

Dims dims_of(const Tensor& x, const Tensor& w, const Tensor& y_like, const kernels::Conv2dGeometry& g) {
  return Dims{x.size(0), x.size(1), x.size(2), x.size(3), w.size(0), w.size(2), w.size(3),
              y_like.size(2), y_like.size(3), g.stride_h, g.stride_w, g.pad_h, g.pad_w,
              g.dilation_h, g.dilation_w, g.groups, g.compute};
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

void sgemm(DType compute, CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int64_t m, int64_t n, int64_t k, const float* a,
           int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  gemm_block(compute, ta == CblasTrans, tb == CblasTrans, m, n, k, 1.f, a, lda, b, ldb, beta, c, ldc);
}

/** The output columns q whose input column q*sw - pw + s*dw lies inside [0, W): [lo, hi). */
inline void valid_q(const Dims& d, int64_t s, int64_t& lo, int64_t& hi) {
  const int64_t first = d.pw - s * d.dw;  // need q*sw >= first
  lo = first <= 0 ? 0 : (first + d.sw - 1) / d.sw;
  const int64_t last = d.W - 1 + d.pw - s * d.dw;  // need q*sw <= last
  hi = last < 0 ? 0 : last / d.sw + 1;
  lo = std::min(lo, d.Q);
  hi = std::clamp(hi, lo, d.Q);
}

/**
 * Unfolds output rows [p0, p1) of nc channels of one image (x points at the first, [nc, H, W])
 * into col rows (c*R + r)*S + s, row stride ld, column (p - p0)*Q + q.
 */
void im2col(const float* x, const Dims& d, int64_t nc, int64_t p0, int64_t p1, float* col, int64_t ld) {
  for (int64_t c = 0; c < nc; ++c) {
    for (int64_t r = 0; r < d.R; ++r) {
      for (int64_t s = 0; s < d.S; ++s) {
        float* row = col + ((c * d.R + r) * d.S + s) * ld;
        int64_t lo, hi;
        valid_q(d, s, lo, hi);
        const int64_t w0 = s * d.dw - d.pw;  // input column of q = 0
        for (int64_t p = p0; p < p1; ++p) {
          float* out = row + (p - p0) * d.Q;
          const int64_t h = p * d.sh - d.ph + r * d.dh;
          if (h < 0 || h >= d.H) {
            std::fill_n(out, d.Q, 0.f);
            continue;
          }
          const float* in = x + (c * d.H + h) * d.W + w0;
          std::fill_n(out, lo, 0.f);
          if (d.sw == 1) {
            std::memcpy(out + lo, in + lo, static_cast<size_t>(hi - lo) * sizeof(float));
          } else if (d.sw == 2) {  // ResNet's strided convolutions: a constant stride vectorises
            for (int64_t q = lo; q < hi; ++q) out[q] = in[2 * q];
          } else {
            for (int64_t q = lo; q < hi; ++q) out[q] = in[q * d.sw];
          }
          std::fill(out + hi, out + d.Q, 0.f);
        }
      }
    }
  }
}

/** The inverse of im2col's layout: gx[nc, H, W] += every column gradient that read an element. */
void col2im(const float* col, int64_t ld, const Dims& d, int64_t nc, int64_t p0, int64_t p1, float* gx) {
  for (int64_t c = 0; c < nc; ++c) {
    for (int64_t r = 0; r < d.R; ++r) {
      for (int64_t s = 0; s < d.S; ++s) {
        const float* row = col + ((c * d.R + r) * d.S + s) * ld;
        int64_t lo, hi;
        valid_q(d, s, lo, hi);
        const int64_t w0 = s * d.dw - d.pw;
        for (int64_t p = p0; p < p1; ++p) {
          const int64_t h = p * d.sh - d.ph + r * d.dh;
          if (h < 0 || h >= d.H) continue;
          const float* in = row + (p - p0) * d.Q;
          float* out = gx + (c * d.H + h) * d.W + w0;
          if (d.sw == 1) {
            for (int64_t q = lo; q < hi; ++q) out[q] += in[q];
          } else if (d.sw == 2) {
            for (int64_t q = lo; q < hi; ++q) out[2 * q] += in[q];
          } else {
            for (int64_t q = lo; q < hi; ++q) out[q * d.sw] += in[q];
          }
        }
      }
    }
  }
}

/** The direct kernels' geometry when they apply (stride 1, dense, one group, and the CPU has them). */
bool direct_geometry(const Dims& d, direct::Geometry& out) {
  if (d.sh != 1 || d.sw != 1 || d.dh != 1 || d.dw != 1 || d.G != 1 || !direct::enabled()) return false;
  if (d.compute != DType::Float32) return false;  // the direct kernels multiply in float32 only
  out = direct::Geometry{d.N, d.C, d.H, d.W, d.K, d.R, d.S, d.P, d.Q, d.ph, d.pw};
  return true;
}

/** Whether the batched weight gradient applies (small outputs, several images). */
bool batched_weight_grad(const Dims& d) { return d.pq() < kSmallPQ && d.N > 1; }
/** Whether the batched forward and input gradient apply (very small outputs, several images). */
bool batched_thin(const Dims& d) { return d.pq() < kThinPQ && d.N > 1; }

/** Output rows per unfolded block (the whole image for pointwise convolutions, which unfold nothing). */
int64_t block_rows(const Dims& d) {
  if (d.pointwise()) return d.P;
  const int64_t by_cache = kBlockColFloats / std::max<int64_t>(1, d.crs() * d.Q);
  const int64_t by_width = ceil_div(kMinBlockCols, d.Q);
  return std::clamp<int64_t>(std::max(by_cache, by_width), 1, d.P);
}

/** Batched weight gradient: images per batch chunk. */
int64_t batch_images(const Dims& d) {
  return std::clamp<int64_t>(kBatchColFloats / std::max<int64_t>(1, d.C * d.R * d.S * d.pq()), 1, d.N);
}

/** Channel k's bias added to (or, without bias, nothing done to) out[k * ld + j], j < n. */
void add_bias(float* out, int64_t K, int64_t n, int64_t ld, const float* bias) {
  if (!bias) return;
  for (int64_t k = 0; k < K; ++k) {
    float* row = out + k * ld;
    const float b = bias[k];
    for (int64_t j = 0; j < n; ++j) row[j] += b;
  }
}

// ---- forward ------------------------------------------------------------------------------------

void forward_per_image(const Dims& d, const float* px, const float* pw, const float* pb, float* py) {
  const int64_t crs = d.crs(), pq = d.pq(), cg = d.cg(), kg = d.kg();
  const int64_t rows = block_rows(d), blocks = ceil_div(d.P, rows);
  std::vector<PackedA> wg;  // W_g packed once for all images and blocks (under autocast)
  for (int64_t g = 0; g < d.G; ++g) wg.emplace_back(d.compute, false, kg, crs, pw + g * kg * crs, crs);
  parallel_for(0, d.N * blocks, 1, [&](int64_t u0, int64_t u1) {
    float* col = d.pointwise() ? nullptr : grow(thread_workspace().col, crs * rows * d.Q);
    for (int64_t u = u0; u < u1; ++u) {
      const int64_t n = u / blocks, p0 = (u % blocks) * rows, p1 = std::min(d.P, p0 + rows);
      const int64_t cols = (p1 - p0) * d.Q;
      for (int64_t g = 0; g < d.G; ++g) {
        const float* xg = px + n * d.chw() + g * cg * d.hw();
        float* yg = py + (n * d.K + g * kg) * pq + p0 * d.Q;
        if (d.pointwise()) {
          wg[g].gemm(false, cols, 1.f, xg + p0 * d.Q, pq, 0.f, yg, pq);
        } else {
          im2col(xg, d, cg, p0, p1, col, cols);
          wg[g].gemm(false, cols, 1.f, col, cols, 0.f, yg, pq);
        }
      }
      add_bias(py + n * d.K * pq + p0 * d.Q, d.K, cols, pq, pb);
    }
  });
}

/**
 * Runs fn(g, r0, r1, c0, c1) over fixed blocks (rb rows x cb columns) of G [rows, cols] GEMM
 * outputs, one thread per block.
 */
template <typename Fn>
void for_blocks(int64_t G, int64_t rows, int64_t cols, int64_t rb, int64_t cb, const Fn& fn) {
  const int64_t nr = ceil_div(rows, rb), nc = ceil_div(cols, cb);
  parallel_for(0, G * nr * nc, 1, [&](int64_t u0, int64_t u1) {
    for (int64_t u = u0; u < u1; ++u) {
      const int64_t g = u / (nr * nc), r = u / nc % nr, c = u % nc;
      fn(g, r * rb, std::min(rows, (r + 1) * rb), c * cb, std::min(cols, (c + 1) * cb));
    }
  });
}

/**
 * Small outputs: images n0..n0+m side by side, col[C*R*S, m*PQ] (image i at column i*PQ) from
 * x, and, when gy is given, gy'[K, m*PQ] from gy; one thread per image.
 */
void unfold_chunk(const Dims& d, const float* px, const float* pgy, int64_t n0, int64_t m, float* col, float* gyt) {
  const int64_t pq = d.pq(), ld = m * pq;
  parallel_for(0, m, 1, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      if (px) im2col(px + (n0 + i) * d.chw(), d, d.C, 0, d.P, col + i * pq, ld);
      if (!pgy) continue;
      for (int64_t k = 0; k < d.K; ++k) {
        std::memcpy(gyt + k * ld + i * pq, pgy + ((n0 + i) * d.K + k) * pq, static_cast<size_t>(pq) * sizeof(float));
      }
    }
  });
}

/**
 * Small outputs: y'[K, m*PQ] = W_g · col_g for batch chunks of m images, in fixed blocks of output
 * channels x pixels (W is packed once per block, not once per thin image), then y = y' + b.
 */
void forward_batched(const Dims& d, const float* px, const float* pw, const float* pb, float* py) {
  const int64_t crs = d.crs(), pq = d.pq(), kg = d.kg(), nb = batch_images(d);
  CallWorkspace& ws = call_workspace();
  float* col = grow(ws.col, d.C * d.R * d.S * nb * pq);
  float* tmp = grow(ws.tmp, d.K * nb * pq);
  for (int64_t n0 = 0; n0 < d.N; n0 += nb) {
    const int64_t m = std::min(nb, d.N - n0), ld = m * pq;
    unfold_chunk(d, px, nullptr, n0, m, col, nullptr);
    for_blocks(d.G, kg, ld, block_rows_for(d.compute, kBatchBlockRows), block_cols_for(d.compute, kBatchBlockCols), [&](int64_t g, int64_t k0, int64_t k1, int64_t c0,
                                                                 int64_t c1) {
      sgemm(d.compute, CblasNoTrans, CblasNoTrans, k1 - k0, c1 - c0, crs, pw + (g * kg + k0) * crs, crs, col + g * crs * ld + c0,
            ld, 0.f, tmp + (g * kg + k0) * ld + c0, ld);
    });
    parallel_for(0, m, 1, [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i) {
        for (int64_t k = 0; k < d.K; ++k) {
          const float b = pb ? pb[k] : 0.f;
          const float* src = tmp + k * ld + i * pq;
          float* dst = py + ((n0 + i) * d.K + k) * pq;
          for (int64_t j = 0; j < pq; ++j) dst[j] = src[j] + b;
        }
      }
    });
  }
}

void conv2d_forward(const Tensor& x, const Tensor& w, const Tensor& b, Tensor& y, const kernels::Conv2dGeometry& g) {
  const Dims d = dims_of(x, w, y, g);
  if (y.numel() == 0) return;
  const float* pb = b.defined() ? b.data<float>() : nullptr;
  direct::Geometry dg;
  if (direct_geometry(d, dg) && direct::forward_supported(dg)) {
    direct::forward(x.data<float>(), w.data<float>(), pb, y.data<float>(), dg);
  } else if (batched_thin(d)) {
    forward_batched(d, x.data<float>(), w.data<float>(), pb, y.data<float>());
  } else {
    forward_per_image(d, x.data<float>(), w.data<float>(), pb, y.data<float>());
  }
}

// ---- backward -----------------------------------------------------------------------------------

/** gb[k] = Σ_{n, p, q} gy[n, k, p, q], in double, one thread per channel. */
void bias_grad(const Dims& d, const float* pgy, float* pgb) {
  const int64_t pq = d.pq();
  parallel_for(0, d.K, 1, [&](int64_t k0, int64_t k1) {
    for (int64_t k = k0; k < k1; ++k) {
      double s = 0;
      for (int64_t n = 0; n < d.N; ++n) {
        const float* row = pgy + (n * d.K + k) * pq;
        float lanes[16] = {};  // vectorisable float partials of at most a few hundred terms each
        int64_t j = 0;
        for (; j + 16 <= pq; j += 16) {
          for (int l = 0; l < 16; ++l) lanes[l] += row[j + l];
        }
        for (; j < pq; ++j) s += row[j];
        for (float l : lanes) s += l;
      }
      pgb[k] = static_cast<float>(s);
    }
  });
}

/** gx[n] = col2im(W_gᵀ · gy[n]) per group, or W_gᵀ · gy[n] itself for pointwise: one thread per image. */
void input_grad(const Dims& d, const float* pgy, const float* pw, float* pgx) {
  const int64_t crs = d.crs(), pq = d.pq(), cg = d.cg(), kg = d.kg(), rows = block_rows(d);
  std::vector<PackedA> wt;  // W_gᵀ packed once for all images and blocks (under autocast)
  for (int64_t g = 0; g < d.G; ++g) wt.emplace_back(d.compute, true, crs, kg, pw + g * kg * crs, crs);
  parallel_for(0, d.N, 1, [&](int64_t n0, int64_t n1) {
    float* col = d.pointwise() ? nullptr : grow(thread_workspace().col, crs * rows * d.Q);
    for (int64_t n = n0; n < n1; ++n) {
      if (!d.pointwise()) std::fill_n(pgx + n * d.chw(), d.chw(), 0.f);
      for (int64_t g = 0; g < d.G; ++g) {
        float* gxg = pgx + n * d.chw() + g * cg * d.hw();
        for (int64_t p0 = 0; p0 < d.P; p0 += rows) {
          const int64_t p1 = std::min(d.P, p0 + rows), cols = (p1 - p0) * d.Q;
          const float* gyb = pgy + (n * d.K + g * kg) * pq + p0 * d.Q;  // [Kg, cols], row stride PQ
          if (d.pointwise()) {
            wt[g].gemm(false, cols, 1.f, gyb, pq, 0.f, gxg + p0 * d.Q, pq);
          } else {
            wt[g].gemm(false, cols, 1.f, gyb, pq, 0.f, col, cols);
            col2im(col, cols, d, cg, p0, p1, gxg);
          }
        }
      }
    }
  });
}

/**
 * Weight gradient for large outputs: fixed chunks of images (the count depends on the shapes
 * only), each summing gy[n] · col[n]ᵀ into a partial of its own; the partials are added in chunk
 * order.
 */
void weight_grad_per_image(const Dims& d, const float* pgy, const float* px, float* pgw) {
  const int64_t crs = d.crs(), pq = d.pq(), cg = d.cg(), kg = d.kg(), wn = d.K * crs;
  const int64_t rows = block_rows(d);
  const int64_t chunks = std::clamp<int64_t>(kPartialFloats / std::max<int64_t>(1, wn), 1,
                                             std::min(d.N, kMaxWeightChunks));
  float* partials = chunks > 1 ? grow(call_workspace().partials, chunks * wn) : pgw;
  parallel_for(0, chunks, 1, [&](int64_t c0, int64_t c1) {
    float* col = d.pointwise() ? nullptr : grow(thread_workspace().col, crs * rows * d.Q);
    for (int64_t c = c0; c < c1; ++c) {
      float* gwc = partials + c * wn;
      const int64_t first = c * d.N / chunks, last = (c + 1) * d.N / chunks;  // chunk c's images
      for (int64_t n = first; n < last; ++n) {
        for (int64_t g = 0; g < d.G; ++g) {
          const float* xg = px + n * d.chw() + g * cg * d.hw();
          for (int64_t p0 = 0; p0 < d.P; p0 += rows) {
            const int64_t p1 = std::min(d.P, p0 + rows), cols = (p1 - p0) * d.Q;
            const float* xb = xg + p0 * d.Q;
            int64_t ldx = pq;
            if (!d.pointwise()) {
              im2col(xg, d, cg, p0, p1, col, cols);
              xb = col;
              ldx = cols;
            }
            // gW_g[Kg, CRS] (+)= gy-block[Kg, cols] · colᵀ
            sgemm(d.compute, CblasNoTrans, CblasTrans, kg, crs, cols, pgy + (n * d.K + g * kg) * pq + p0 * d.Q, pq, xb, ldx,
                  n == first && p0 == 0 ? 0.f : 1.f, gwc + g * kg * crs, crs);
          }
        }
      }
    }
  });
  if (chunks > 1) {  // gw = Σ partials in chunk order
    parallel_for(0, wn, 4096, [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i) {
        float s = partials[i];
        for (int64_t c = 1; c < chunks; ++c) s += partials[c * wn + i];
        pgw[i] = s;
      }
    });
  }
}

/**
 * Small outputs, batch chunks of m images side by side: gW_g (+)= gy'_g · col_gᵀ in fixed blocks
 * of gW (the chunks accumulated in order), then, when gx is wanted, gcol_g = W_gᵀ · gy'_g in fixed
 * blocks over col, folded back per image.
 */
void backward_batched(const Dims& d, const float* pgy, const float* px, const float* pw, float* pgx, float* pgw) {
  const int64_t crs = d.crs(), pq = d.pq(), kg = d.kg(), nb = batch_images(d);
  CallWorkspace& ws = call_workspace();
  float* col = grow(ws.col, d.C * d.R * d.S * nb * pq);
  float* gyt = grow(ws.tmp, d.K * nb * pq);
  for (int64_t n0 = 0; n0 < d.N; n0 += nb) {
    const int64_t m = std::min(nb, d.N - n0), ld = m * pq;
    unfold_chunk(d, px, pgy, n0, m, col, gyt);
    const float beta = n0 == 0 ? 0.f : 1.f;
    for_blocks(d.G, kg, crs, block_rows_for(d.compute, kGwBlock), block_cols_for(d.compute, kGwBlock), [&](int64_t g, int64_t k0, int64_t k1, int64_t r0, int64_t r1) {
      sgemm(d.compute, CblasNoTrans, CblasTrans, k1 - k0, r1 - r0, ld, gyt + (g * kg + k0) * ld, ld, col + (g * crs + r0) * ld,
            ld, beta, pgw + (g * kg + k0) * crs + r0, crs);
    });
    if (!pgx) continue;
    // col is free again (the weight GEMMs have returned): gcol goes there.
    for_blocks(d.G, crs, ld, block_rows_for(d.compute, kBatchBlockRows), block_cols_for(d.compute, kBatchBlockCols), [&](int64_t g, int64_t r0, int64_t r1, int64_t c0,
                                                                  int64_t c1) {
      sgemm(d.compute, CblasTrans, CblasNoTrans, r1 - r0, c1 - c0, kg, pw + g * kg * crs + r0, crs, gyt + g * kg * ld + c0, ld,
            0.f, col + (g * crs + r0) * ld + c0, ld);
    });
    parallel_for(0, m, 1, [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i) {
        float* gxn = pgx + (n0 + i) * d.chw();
        std::fill_n(gxn, d.chw(), 0.f);
        col2im(col + i * pq, ld, d, d.C, 0, d.P, gxn);
      }
    });
  }
}

void conv2d_backward(const Tensor& gy, const Tensor& x, const Tensor& w, Tensor& gx, Tensor& gw, Tensor& gb,
                     const kernels::Conv2dGeometry& g) {
  const Dims d = dims_of(x, w, gy, g);
  float* pgw = gw.data<float>();
  float* pgx = gx.defined() ? gx.data<float>() : nullptr;
  float* pgb = gb.defined() ? gb.data<float>() : nullptr;
  if (gy.numel() == 0) {  // empty batch (or empty output): all gradients are zero
    std::fill_n(pgw, gw.numel(), 0.f);
    if (pgx) std::fill_n(pgx, gx.numel(), 0.f);
    if (pgb) std::fill_n(pgb, gb.numel(), 0.f);
    return;
  }
  direct::Geometry dg;
  if (direct_geometry(d, dg) && direct::backward_supported(dg, pgx != nullptr)) {
    direct::backward(gy.data<float>(), x.data<float>(), w.data<float>(), pgx, pgw, pgb, dg);
    return;
  }
  if (pgb) bias_grad(d, gy.data<float>(), pgb);
  if (batched_thin(d)) {
    backward_batched(d, gy.data<float>(), x.data<float>(), w.data<float>(), pgx, pgw);
    return;
  }
  if (pgx) input_grad(d, gy.data<float>(), w.data<float>(), pgx);
  if (batched_weight_grad(d)) {
    backward_batched(d, gy.data<float>(), x.data<float>(), w.data<float>(), nullptr, pgw);
  } else {
    weight_grad_per_image(d, gy.data<float>(), x.data<float>(), pgw);
  }
}

}  // namespace

DDP4J_REGISTER_KERNEL(conv2d_forward, CPU, conv2d_forward);
DDP4J_REGISTER_KERNEL(conv2d_backward, CPU, conv2d_backward);

}  // namespace ddp4j::cpu
