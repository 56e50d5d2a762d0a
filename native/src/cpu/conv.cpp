// CPU Conv2d: im2col + one OpenBLAS GEMM per chunk of images, col2im for the input gradient.
//
// Images are unfolded side by side into col[C*R*S, m*P*Q] (m images per chunk), so the forward is
// one GEMM  W[K, CRS] · col  and the backward two:  gW += gyᵀ-chunk · colᵀ  and  gcol = Wᵀ · gy-chunk.
// Chunks are sized to stay in cache (see kMaxColFloats); the price is a transposition between
// [K, m*PQ] and the [m, K, PQ] layout of y / gy, which is also where the bias is added (forward)
// and summed (backward). A chunk of one image needs no transposition at all. Workspaces are per
// thread and grow only, so steady-state training allocates nothing here.
// Stride-1 convolutions on CPUs with AVX-512 take the direct kernels of conv_direct.cpp instead.
#include <cblas.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "cpu/conv_direct.h"
#include "ddp4j/dispatch.h"
#include "ddp4j/kernels.h"

namespace ddp4j::cpu {
namespace {

// At most this many floats of im2col workspace per chunk (256 KiB): chunks that stay in the
// core's L2 cache measured faster than one big GEMM over the whole batch (the two-conv net at
// batch 100: 43 -> 33 ms per training step), whose 31 MB unfolded input streams through memory.
// A chunk always holds at least one image.
constexpr int64_t kMaxColFloats = int64_t{1} << 16;

struct Workspace {
  std::vector<float> col;   // [CRS, m*PQ]: unfolded input, reused for the column gradient
  std::vector<float> tmp;   // [K, m*PQ]: output or output gradient in GEMM layout
  std::vector<double> acc;  // [K]: bias-gradient accumulators
};

Workspace& workspace() {
  thread_local Workspace ws;
  return ws;
}

template <typename T>
T* grow(std::vector<T>& v, int64_t n) {
  if (static_cast<int64_t>(v.size()) < n) v.resize(static_cast<size_t>(n));
  return v.data();
}

struct Dims {
  int64_t N, C, H, W, K, R, S, P, Q;
  int64_t sh, sw, ph, pw;
  int64_t crs() const { return C * R * S; }
  int64_t pq() const { return P * Q; }
  int64_t chw() const { return C * H * W; }
};

Dims dims_of(const Tensor& x, const Tensor& w, const Tensor& y_like, const kernels::Conv2dGeometry& g) {
  return Dims{x.size(0), x.size(1), x.size(2), x.size(3), w.size(0), w.size(2), w.size(3),
              y_like.size(2), y_like.size(3), g.stride_h, g.stride_w, g.pad_h, g.pad_w};
}

/** The output columns q whose input column q*sw - pw + s lies inside [0, W): [lo, hi). */
inline void valid_q(const Dims& d, int64_t s, int64_t& lo, int64_t& hi) {
  const int64_t first = d.pw - s;  // need q*sw >= first
  lo = first <= 0 ? 0 : (first + d.sw - 1) / d.sw;
  const int64_t last = d.W - 1 + d.pw - s;  // need q*sw <= last
  hi = last < 0 ? 0 : last / d.sw + 1;
  lo = std::min(lo, d.Q);
  hi = std::clamp(hi, lo, d.Q);
}

/** Unfolds one image x[C, H, W] into col rows (C*R*S of them, row stride ld), PQ columns each. */
void im2col(const float* x, const Dims& d, float* col, int64_t ld) {
  for (int64_t c = 0; c < d.C; ++c) {
    for (int64_t r = 0; r < d.R; ++r) {
      for (int64_t s = 0; s < d.S; ++s) {
        float* row = col + ((c * d.R + r) * d.S + s) * ld;
        int64_t lo, hi;
        valid_q(d, s, lo, hi);
        const int64_t w0 = s - d.pw;  // input column of q = 0
        for (int64_t p = 0; p < d.P; ++p) {
          float* out = row + p * d.Q;
          const int64_t h = p * d.sh - d.ph + r;
          if (h < 0 || h >= d.H) {
            std::fill_n(out, d.Q, 0.f);
            continue;
          }
          const float* in = x + (c * d.H + h) * d.W + w0;
          std::fill_n(out, lo, 0.f);
          if (d.sw == 1) {
            std::memcpy(out + lo, in + lo, static_cast<size_t>(hi - lo) * sizeof(float));
          } else {
            for (int64_t q = lo; q < hi; ++q) out[q] = in[q * d.sw];
          }
          std::fill(out + hi, out + d.Q, 0.f);
        }
      }
    }
  }
}

/** Folds column gradients back: gx[C, H, W] = Σ over the windows that read each element. */
void col2im(const float* col, int64_t ld, const Dims& d, float* gx) {
  std::fill_n(gx, d.chw(), 0.f);
  for (int64_t c = 0; c < d.C; ++c) {
    for (int64_t r = 0; r < d.R; ++r) {
      for (int64_t s = 0; s < d.S; ++s) {
        const float* row = col + ((c * d.R + r) * d.S + s) * ld;
        int64_t lo, hi;
        valid_q(d, s, lo, hi);
        const int64_t w0 = s - d.pw;
        for (int64_t p = 0; p < d.P; ++p) {
          const int64_t h = p * d.sh - d.ph + r;
          if (h < 0 || h >= d.H) continue;
          const float* in = row + p * d.Q;
          float* out = gx + (c * d.H + h) * d.W + w0;
          if (d.sw == 1) {
            for (int64_t q = lo; q < hi; ++q) out[q] += in[q];
          } else {
            for (int64_t q = lo; q < hi; ++q) out[q * d.sw] += in[q];
          }
        }
      }
    }
  }
}

/** The direct kernels' geometry when they apply (stride 1 and the CPU has them). */
bool direct_geometry(const Dims& d, direct::Geometry& out) {
  if (d.sh != 1 || d.sw != 1 || !direct::enabled()) return false;
  out = direct::Geometry{d.N, d.C, d.H, d.W, d.K, d.R, d.S, d.P, d.Q, d.ph, d.pw};
  return true;
}

/** Images per chunk: as many as fit in kMaxColFloats of workspace, at least one. */
int64_t chunk_images(const Dims& d) {
  const int64_t per_image = std::max<int64_t>(1, d.crs() * d.pq());
  return std::clamp<int64_t>(kMaxColFloats / per_image, 1, std::max<int64_t>(1, d.N));
}

void conv2d_forward(const Tensor& x, const Tensor& w, const Tensor& b, Tensor& y, const kernels::Conv2dGeometry& g) {
  const Dims d = dims_of(x, w, y, g);
  if (y.numel() == 0) return;
  direct::Geometry dg;
  if (direct_geometry(d, dg) && direct::forward_supported(dg)) {
    direct::forward(x.data<float>(), w.data<float>(), b.defined() ? b.data<float>() : nullptr, y.data<float>(), dg);
    return;
  }
  const int64_t crs = d.crs(), pq = d.pq(), nb = chunk_images(d);
  Workspace& ws = workspace();
  float* col = grow(ws.col, crs * nb * pq);
  const float* px = x.data<float>();
  const float* pw = w.data<float>();
  const float* pb = b.defined() ? b.data<float>() : nullptr;
  float* py = y.data<float>();
  for (int64_t n0 = 0; n0 < d.N; n0 += nb) {
    const int64_t m = std::min(nb, d.N - n0), ld = m * pq;
    for (int64_t i = 0; i < m; ++i) im2col(px + (n0 + i) * d.chw(), d, col + i * pq, ld);
    // One image: GEMM straight into y[n] ([K, PQ]); several: into tmp, then transpose with the bias.
    float* out = m == 1 ? py + n0 * d.K * pq : grow(ws.tmp, d.K * ld);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(d.K), static_cast<int>(ld),
                static_cast<int>(crs), 1.f, pw, static_cast<int>(crs), col, static_cast<int>(ld), 0.f, out,
                static_cast<int>(ld));
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t k = 0; k < d.K; ++k) {
        const float bias = pb ? pb[k] : 0.f;
        float* dst = py + ((n0 + i) * d.K + k) * pq;
        const float* src = out + k * ld + i * pq;
        if (m == 1) {
          if (pb) for (int64_t j = 0; j < pq; ++j) dst[j] += bias;
        } else {
          for (int64_t j = 0; j < pq; ++j) dst[j] = src[j] + bias;
        }
      }
    }
  }
}

void conv2d_backward(const Tensor& gy, const Tensor& x, const Tensor& w, Tensor& gx, Tensor& gw, Tensor& gb,
                     const kernels::Conv2dGeometry& g) {
  const Dims d = dims_of(x, w, gy, g);
  const int64_t crs = d.crs(), pq = d.pq(), nb = chunk_images(d);
  Workspace& ws = workspace();
  double* acc = grow(ws.acc, d.K);
  std::fill_n(acc, d.K, 0.0);
  float* pgw = gw.data<float>();
  if (gy.numel() == 0) {  // empty batch (or empty output): all gradients are zero
    std::fill_n(pgw, gw.numel(), 0.f);
    if (gx.defined()) std::fill_n(gx.data<float>(), gx.numel(), 0.f);
    if (gb.defined()) std::fill_n(gb.data<float>(), gb.numel(), 0.f);
    return;
  }
  direct::Geometry dg;
  if (direct_geometry(d, dg) && direct::backward_supported(dg, gx.defined())) {
    direct::backward(gy.data<float>(), x.data<float>(), w.data<float>(), gx.defined() ? gx.data<float>() : nullptr,
                     pgw, gb.defined() ? gb.data<float>() : nullptr, dg);
    return;
  }
  float* col = grow(ws.col, crs * nb * pq);
  const float* px = x.data<float>();
  const float* pw = w.data<float>();
  const float* pgy = gy.data<float>();
  float* pgx = gx.defined() ? gx.data<float>() : nullptr;
  for (int64_t n0 = 0; n0 < d.N; n0 += nb) {
    const int64_t m = std::min(nb, d.N - n0), ld = m * pq;
    for (int64_t i = 0; i < m; ++i) im2col(px + (n0 + i) * d.chw(), d, col + i * pq, ld);
    // gy for this chunk as [K, m*PQ]: one image already has that layout; several are transposed.
    const float* g_chunk = pgy + n0 * d.K * pq;
    if (m > 1) {
      float* t = grow(ws.tmp, d.K * ld);
      for (int64_t i = 0; i < m; ++i) {
        for (int64_t k = 0; k < d.K; ++k) {
          std::memcpy(t + k * ld + i * pq, pgy + ((n0 + i) * d.K + k) * pq, static_cast<size_t>(pq) * sizeof(float));
        }
      }
      g_chunk = t;
    }
    if (gb.defined()) {
      for (int64_t k = 0; k < d.K; ++k) {
        const float* row = g_chunk + k * ld;
        double s = 0;
        for (int64_t j = 0; j < ld; ++j) s += row[j];
        acc[k] += s;
      }
    }
    // gW[K, CRS] (+)= gy-chunk[K, m*PQ] · colᵀ
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(d.K), static_cast<int>(crs),
                static_cast<int>(ld), 1.f, g_chunk, static_cast<int>(ld), col, static_cast<int>(ld),
                n0 == 0 ? 0.f : 1.f, pgw, static_cast<int>(crs));
    if (pgx) {
      // gcol[CRS, m*PQ] = Wᵀ · gy-chunk, written over col (no longer needed), then folded per image.
      cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, static_cast<int>(crs), static_cast<int>(ld),
                  static_cast<int>(d.K), 1.f, pw, static_cast<int>(crs), g_chunk, static_cast<int>(ld), 0.f, col,
                  static_cast<int>(ld));
      for (int64_t i = 0; i < m; ++i) col2im(col + i * pq, ld, d, pgx + (n0 + i) * d.chw());
    }
  }
  if (gb.defined()) {
    float* pgb = gb.data<float>();
    for (int64_t k = 0; k < d.K; ++k) pgb[k] = static_cast<float>(acc[k]);
  }
}

}  // namespace

DDP4J_REGISTER_KERNEL(conv2d_forward, CPU, conv2d_forward);
DDP4J_REGISTER_KERNEL(conv2d_backward, CPU, conv2d_backward);

}  // namespace ddp4j::cpu
