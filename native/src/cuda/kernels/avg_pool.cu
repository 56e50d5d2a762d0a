// CUDA AvgPool2d, as src/cpu/avg_pool.cpp (PyTorch's divisor rule: divisor_override, else the
// window clipped to the padded input with count_include_pad, or to the input without). The forward
// runs one thread per output; the backward one thread per input element, gathering from the
// windows that cover it, so it needs no atomics and is deterministic.
#include "cuda/cuda_context.h"
#include "ddp4j/dispatch.h"
#include "ddp4j/kernels.h"

namespace ddp4j::cuda {
namespace {

constexpr int kThreads = 256;

struct AvgDims {
  int64_t H, W, P, Q;
  int kh, kw, sh, sw, ph, pw;
  bool count_include_pad;
  int64_t divisor_override;
};

/** Output (p, q)'s input range [h0, h1) x [w0, w1), clipped to the input, and its divisor. */
__device__ inline void window(const AvgDims& d, int64_t p, int64_t q, int64_t& h0, int64_t& h1, int64_t& w0,
                              int64_t& w1, int64_t& divisor) {
  h0 = p * d.sh - d.ph;
  w0 = q * d.sw - d.pw;
  h1 = min(h0 + d.kh, d.H + d.ph);
  w1 = min(w0 + d.kw, d.W + d.pw);
  const int64_t padded_size = (h1 - h0) * (w1 - w0);
  h0 = max(h0, int64_t{0});
  w0 = max(w0, int64_t{0});
  h1 = min(h1, d.H);
  w1 = min(w1, d.W);
  divisor = d.divisor_override > 0 ? d.divisor_override : d.count_include_pad ? padded_size : (h1 - h0) * (w1 - w0);
}

__global__ void __launch_bounds__(kThreads) forward_kernel(const float* x, AvgDims d, int64_t total, float* y) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t o = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; o < total; o += stride) {
    const int64_t q = o % d.Q, p = (o / d.Q) % d.P, plane = o / (d.P * d.Q);
    int64_t h0, h1, w0, w1, divisor;
    window(d, p, q, h0, h1, w0, w1, divisor);
    const float* in = x + plane * d.H * d.W;
    float sum = 0.f;
    for (int64_t h = h0; h < h1; ++h) {
      for (int64_t w = w0; w < w1; ++w) sum += in[h * d.W + w];
    }
    // A window over padding only (ceil mode) gives 0, as PyTorch.
    y[o] = (h0 >= h1 || w0 >= w1) ? 0.f : sum / static_cast<float>(divisor);
  }
}

__global__ void __launch_bounds__(kThreads) backward_kernel(const float* gy, AvgDims d, int64_t total, float* gx) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += stride) {
    const int64_t w = i % d.W, h = (i / d.W) % d.H, plane = i / (d.H * d.W);
    // Outputs whose window [p sh - ph, p sh - ph + kh) holds h.
    const int64_t p0 = h + d.ph < d.kh ? 0 : (h + d.ph - d.kh) / d.sh + 1, p1 = min((h + d.ph) / d.sh + 1, d.P);
    const int64_t q0 = w + d.pw < d.kw ? 0 : (w + d.pw - d.kw) / d.sw + 1, q1 = min((w + d.pw) / d.sw + 1, d.Q);
    const float* g = gy + plane * d.P * d.Q;
    float sum = 0.f;
    for (int64_t p = p0; p < p1; ++p) {
      for (int64_t q = q0; q < q1; ++q) {
        int64_t h0, h1, w0, w1, divisor;
        window(d, p, q, h0, h1, w0, w1, divisor);
        sum += g[p * d.Q + q] / static_cast<float>(divisor);
      }
    }
    gx[i] = sum;
  }
}

AvgDims dims(const Tensor& x, const Tensor& y, const kernels::Pool2dGeometry& g, bool count_include_pad,
             int64_t divisor_override) {
  return AvgDims{x.size(2), x.size(3), y.size(2), y.size(3), g.kernel_h, g.kernel_w, g.stride_h, g.stride_w,
                 g.pad_h, g.pad_w, count_include_pad, divisor_override};
}

void forward(const Tensor& x, Tensor& y, const kernels::Pool2dGeometry& g, bool count_include_pad,
             int64_t divisor_override) {
  const int64_t total = y.numel();
  if (total == 0) return;
  LaunchContext ctx(x);
  forward_kernel<<<grid_for(total, kThreads), kThreads, 0, ctx.stream>>>(
      x.data<float>(), dims(x, y, g, count_include_pad, divisor_override), total, y.data<float>());
  DDP4J_CUDA_CHECK_LAUNCH("avg_pool2d");
}

void backward(const Tensor& gy, Tensor& gx, const kernels::Pool2dGeometry& g, bool count_include_pad,
              int64_t divisor_override) {
  const int64_t total = gx.numel();
  if (total == 0) return;
  LaunchContext ctx(gx);
  backward_kernel<<<grid_for(total, kThreads), kThreads, 0, ctx.stream>>>(
      gy.data<float>(), dims(gx, gy, g, count_include_pad, divisor_override), total, gx.data<float>());
  DDP4J_CUDA_CHECK_LAUNCH("avg_pool2d_backward");
}

}  // namespace

DDP4J_REGISTER_KERNEL(avg_pool2d_forward, CUDA, forward);
DDP4J_REGISTER_KERNEL(avg_pool2d_backward, CUDA, backward);

}  // namespace ddp4j::cuda
