// CPU MaxPool2d: one pass over each output window, saving the flat h*W+w index of the maximum
// (as torch.nn.functional.max_pool2d(return_indices=True)); the backward scatter-adds into those
// positions, so overlapping windows (stride < kernel) accumulate.
#include <algorithm>
#include <cmath>
#include <limits>

#include "ddp4j/dispatch.h"
#include "ddp4j/kernels.h"

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

void forward(const Tensor& x, Tensor& y, Tensor& indices, const kernels::Pool2dGeometry& g) {
  const int64_t planes = x.size(0) * x.size(1), H = x.size(2), W = x.size(3), P = y.size(2), Q = y.size(3);
  const float* px = x.data<float>();
  float* py = y.data<float>();
  int64_t* pi = indices.data<int64_t>();
  if (g.kernel_h == 2 && g.kernel_w == 2 && g.stride_h == 2 && g.stride_w == 2 && g.pad_h == 0 && g.pad_w == 0) {
    forward_2x2(px, py, pi, planes, H, W, P, Q);
    return;
  }
  for (int64_t plane = 0; plane < planes; ++plane) {
    const float* in = px + plane * H * W;
    for (int64_t p = 0; p < P; ++p) {
      const int64_t h0 = std::max<int64_t>(p * g.stride_h - g.pad_h, 0);
      const int64_t h1 = std::min<int64_t>(p * g.stride_h - g.pad_h + g.kernel_h, H);
      for (int64_t q = 0; q < Q; ++q) {
        const int64_t w0 = std::max<int64_t>(q * g.stride_w - g.pad_w, 0);
        const int64_t w1 = std::min<int64_t>(q * g.stride_w - g.pad_w + g.kernel_w, W);
        // Padding counts as -inf; the first maximum wins and NaN propagates, as PyTorch's CPU kernel.
        float best = -std::numeric_limits<float>::infinity();
        int64_t best_index = h0 * W + w0;
        for (int64_t h = h0; h < h1; ++h) {
          for (int64_t w = w0; w < w1; ++w) {
            const float v = in[h * W + w];
            if (v > best || std::isnan(v)) {
              best = v;
              best_index = h * W + w;
            }
          }
        }
        *py++ = best;
        *pi++ = best_index;
      }
    }
  }
}

void backward(const Tensor& gy, const Tensor& indices, Tensor& gx) {
  const int64_t planes = gx.size(0) * gx.size(1), HW = gx.size(2) * gx.size(3), PQ = gy.size(2) * gy.size(3);
  const float* pgy = gy.data<float>();
  const int64_t* pi = indices.data<int64_t>();
  float* pgx = gx.data<float>();
  std::fill_n(pgx, gx.numel(), 0.f);
  for (int64_t plane = 0; plane < planes; ++plane) {
    float* out = pgx + plane * HW;
    for (int64_t j = 0; j < PQ; ++j) {
      const int64_t idx = pi[plane * PQ + j];
      // Indices come from Java and could be anything: never write outside the plane.
      DDP4J_CHECK_ARG(idx >= 0 && idx < HW, "max_pool2d_backward: index ", idx, " is outside the ", gx.size(2), "x",
                      gx.size(3), " input plane");
      out[idx] += pgy[plane * PQ + j];
    }
  }
}

}  // namespace

DDP4J_REGISTER_KERNEL(max_pool2d_forward, CPU, forward);
DDP4J_REGISTER_KERNEL(max_pool2d_backward, CPU, backward);

}  // namespace ddp4j::cpu
