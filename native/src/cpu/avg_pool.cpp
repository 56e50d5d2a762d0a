// CPU AvgPool2d (torch.nn.AvgPool2d) with PyTorch's divisor rule: divisor_override if set, else
// the window clipped to the padded input (count_include_pad) or to the input itself. Planes are
// independent: each parallel_for call owns whole planes, so every element is computed in one call
// in a fixed order, whatever the thread count.
#include <algorithm>

#include "ddp4j/dispatch.h"
#include "ddp4j/kernels.h"
#include "ddp4j/parallel.h"

namespace ddp4j::cpu {
namespace {

/** One window's input range [h0, h1) x [w0, w1) (clipped to the input) and its divisor; empty if h0 >= h1 or w0 >= w1. */
struct Window {
  int64_t h0, h1, w0, w1, divisor;
};

inline Window window(int64_t p, int64_t q, int64_t H, int64_t W, const kernels::Pool2dGeometry& g,
                     bool count_include_pad, int64_t divisor_override) {
  Window win;
  win.h0 = p * g.stride_h - g.pad_h;
  win.w0 = q * g.stride_w - g.pad_w;
  win.h1 = std::min<int64_t>(win.h0 + g.kernel_h, H + g.pad_h);
  win.w1 = std::min<int64_t>(win.w0 + g.kernel_w, W + g.pad_w);
  const int64_t padded_size = (win.h1 - win.h0) * (win.w1 - win.w0);
  win.h0 = std::max<int64_t>(win.h0, 0);
  win.w0 = std::max<int64_t>(win.w0, 0);
  win.h1 = std::min<int64_t>(win.h1, H);
  win.w1 = std::min<int64_t>(win.w1, W);
  win.divisor = divisor_override > 0 ? divisor_override
                : count_include_pad ? padded_size
                                    : (win.h1 - win.h0) * (win.w1 - win.w0);
  return win;
}

int64_t plane_grain(int64_t plane_elems) { return std::max<int64_t>(1, 32768 / std::max<int64_t>(plane_elems, 1)); }

void forward(const Tensor& x, Tensor& y, const kernels::Pool2dGeometry& g, bool count_include_pad,
             int64_t divisor_override) {
  const int64_t planes = x.size(0) * x.size(1), H = x.size(2), W = x.size(3), P = y.size(2), Q = y.size(3);
  const float* px = x.data<float>();
  float* py = y.data<float>();
  parallel_for(0, planes, plane_grain(H * W), [&](int64_t begin, int64_t end) {
    for (int64_t plane = begin; plane < end; ++plane) {
      const float* in = px + plane * H * W;
      float* out = py + plane * P * Q;
      for (int64_t p = 0; p < P; ++p) {
        for (int64_t q = 0; q < Q; ++q) {
          const Window win = window(p, q, H, W, g, count_include_pad, divisor_override);
          if (win.h0 >= win.h1 || win.w0 >= win.w1) {
            out[p * Q + q] = 0.f;  // only padding under the window (ceil mode): PyTorch leaves 0
            continue;
          }
          // The window's sum in float, row-major, as PyTorch's CPU kernel.
          float sum = 0.f;
          for (int64_t h = win.h0; h < win.h1; ++h) {
            for (int64_t w = win.w0; w < win.w1; ++w) sum += in[h * W + w];
          }
          out[p * Q + q] = sum / static_cast<float>(win.divisor);
        }
      }
    }
  });
}

void backward(const Tensor& gy, Tensor& gx, const kernels::Pool2dGeometry& g, bool count_include_pad,
              int64_t divisor_override) {
  const int64_t planes = gx.size(0) * gx.size(1), H = gx.size(2), W = gx.size(3), P = gy.size(2), Q = gy.size(3);
  const float* pgy = gy.data<float>();
  float* pgx = gx.data<float>();
  parallel_for(0, planes, plane_grain(H * W), [&](int64_t begin, int64_t end) {
    for (int64_t plane = begin; plane < end; ++plane) {
      float* g_in = pgx + plane * H * W;
      const float* g_out = pgy + plane * P * Q;
      std::fill_n(g_in, H * W, 0.f);
      for (int64_t p = 0; p < P; ++p) {
        for (int64_t q = 0; q < Q; ++q) {
          const Window win = window(p, q, H, W, g, count_include_pad, divisor_override);
          if (win.h0 >= win.h1 || win.w0 >= win.w1) continue;
          const float share = g_out[p * Q + q] / static_cast<float>(win.divisor);
          for (int64_t h = win.h0; h < win.h1; ++h) {
            for (int64_t w = win.w0; w < win.w1; ++w) g_in[h * W + w] += share;
          }
        }
      }
    }
  });
}

}  // namespace

DDP4J_REGISTER_KERNEL(avg_pool2d_forward, CPU, forward);
DDP4J_REGISTER_KERNEL(avg_pool2d_backward, CPU, backward);

}  // namespace ddp4j::cpu
