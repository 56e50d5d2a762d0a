// CPU AdaptiveAvgPool2d (torch.nn.AdaptiveAvgPool2d): output row p averages input rows
// [floor(p H / P), ceil((p + 1) H / P)), likewise columns. Planes (n, c) are independent: each
// parallel_for call owns whole planes, so every output and input-gradient element is computed in
// one call in a fixed order, whatever the thread count.
#include <algorithm>

#include "ddp4j/dispatch.h"
#include "ddp4j/kernels.h"
#include "ddp4j/parallel.h"

namespace ddp4j::cpu {
namespace {

inline int64_t window_start(int64_t i, int64_t in, int64_t out) { return (i * in) / out; }
inline int64_t window_end(int64_t i, int64_t in, int64_t out) { return ((i + 1) * in + out - 1) / out; }

/** Planes per parallel_for grain: about 32K input elements of work each. */
int64_t plane_grain(int64_t plane_elems) { return std::max<int64_t>(1, 32768 / std::max<int64_t>(plane_elems, 1)); }

void forward(const Tensor& x, Tensor& y) {
  const int64_t planes = x.size(0) * x.size(1), H = x.size(2), W = x.size(3), P = y.size(2), Q = y.size(3);
  const float* px = x.data<float>();
  float* py = y.data<float>();
  parallel_for(0, planes, plane_grain(H * W), [&](int64_t begin, int64_t end) {
    for (int64_t plane = begin; plane < end; ++plane) {
      const float* in = px + plane * H * W;
      float* out = py + plane * P * Q;
      for (int64_t p = 0; p < P; ++p) {
        const int64_t h0 = window_start(p, H, P), h1 = window_end(p, H, P);
        for (int64_t q = 0; q < Q; ++q) {
          const int64_t w0 = window_start(q, W, Q), w1 = window_end(q, W, Q);
          // Summed in double: a global pool over a large plane stays accurate.
          double sum = 0;
          for (int64_t h = h0; h < h1; ++h) {
            for (int64_t w = w0; w < w1; ++w) sum += in[h * W + w];
          }
          out[p * Q + q] = static_cast<float>(sum / static_cast<double>((h1 - h0) * (w1 - w0)));
        }
      }
    }
  });
}

void backward(const Tensor& gy, Tensor& gx) {
  const int64_t planes = gx.size(0) * gx.size(1), H = gx.size(2), W = gx.size(3), P = gy.size(2), Q = gy.size(3);
  const float* pgy = gy.data<float>();
  float* pgx = gx.data<float>();
  parallel_for(0, planes, plane_grain(H * W), [&](int64_t begin, int64_t end) {
    for (int64_t plane = begin; plane < end; ++plane) {
      float* g_in = pgx + plane * H * W;
      const float* g_out = pgy + plane * P * Q;
      std::fill_n(g_in, H * W, 0.f);
      for (int64_t p = 0; p < P; ++p) {
        const int64_t h0 = window_start(p, H, P), h1 = window_end(p, H, P);
        for (int64_t q = 0; q < Q; ++q) {
          const int64_t w0 = window_start(q, W, Q), w1 = window_end(q, W, Q);
          // As PyTorch: grad / kh / kw, added to every input of the window.
          const float share = g_out[p * Q + q] / static_cast<float>(h1 - h0) / static_cast<float>(w1 - w0);
          for (int64_t h = h0; h < h1; ++h) {
            for (int64_t w = w0; w < w1; ++w) g_in[h * W + w] += share;
          }
        }
      }
    }
  });
}

}  // namespace

DDP4J_REGISTER_KERNEL(adaptive_avg_pool2d_forward, CPU, forward);
DDP4J_REGISTER_KERNEL(adaptive_avg_pool2d_backward, CPU, backward);

}  // namespace ddp4j::cpu
