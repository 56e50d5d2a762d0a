// CUDA AdaptiveAvgPool2d, as src/cpu/adaptive_avg_pool.cpp: output row p averages input rows
// [floor(p H / P), ceil((p + 1) H / P)), likewise columns. The forward runs one thread per output;
// the backward one thread per input element, gathering from the windows that cover it (rows
// [floor(h P / H), ceil((h + 1) P / H)) of the output), so it needs no atomics and is deterministic.
#include "cuda/cuda_context.h"
#include "ddp4j/dispatch.h"
#include "ddp4j/kernels.h"

namespace ddp4j::cuda {
namespace {

constexpr int kThreads = 256;

__device__ inline int64_t range_start(int64_t i, int64_t in, int64_t out) { return (i * in) / out; }
__device__ inline int64_t range_end(int64_t i, int64_t in, int64_t out) { return ((i + 1) * in + out - 1) / out; }

__global__ void __launch_bounds__(kThreads) forward_kernel(const float* x, int64_t H, int64_t W, int64_t P, int64_t Q,
                                                           int64_t total, float* y) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t o = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; o < total; o += stride) {
    const int64_t q = o % Q, p = (o / Q) % P, plane = o / (P * Q);
    const int64_t h0 = range_start(p, H, P), h1 = range_end(p, H, P);
    const int64_t w0 = range_start(q, W, Q), w1 = range_end(q, W, Q);
    const float* in = x + plane * H * W;
    float sum = 0.f;
    for (int64_t h = h0; h < h1; ++h) {
      for (int64_t w = w0; w < w1; ++w) sum += in[h * W + w];
    }
    y[o] = sum / static_cast<float>(h1 - h0) / static_cast<float>(w1 - w0);
  }
}

__global__ void __launch_bounds__(kThreads) backward_kernel(const float* gy, int64_t H, int64_t W, int64_t P,
                                                            int64_t Q, int64_t total, float* gx) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += stride) {
    const int64_t w = i % W, h = (i / W) % H, plane = i / (H * W);
    const int64_t p0 = range_start(h, P, H), p1 = range_end(h, P, H);
    const int64_t q0 = range_start(w, Q, W), q1 = range_end(w, Q, W);
    const float* g = gy + plane * P * Q;
    float sum = 0.f;
    for (int64_t p = p0; p < p1; ++p) {
      const float kh = static_cast<float>(range_end(p, H, P) - range_start(p, H, P));
      for (int64_t q = q0; q < q1; ++q) {
        sum += g[p * Q + q] / kh / static_cast<float>(range_end(q, W, Q) - range_start(q, W, Q));
      }
    }
    gx[i] = sum;
  }
}

void forward(const Tensor& x, Tensor& y) {
  const int64_t total = y.numel();
  if (total == 0) return;
  LaunchContext ctx(x);
  forward_kernel<<<grid_for(total, kThreads), kThreads, 0, ctx.stream>>>(x.data<float>(), x.size(2), x.size(3),
                                                                         y.size(2), y.size(3), total, y.data<float>());
  DDP4J_CUDA_CHECK_LAUNCH("adaptive_avg_pool2d");
}

void backward(const Tensor& gy, Tensor& gx) {
  const int64_t total = gx.numel();
  if (total == 0) return;
  LaunchContext ctx(gx);
  backward_kernel<<<grid_for(total, kThreads), kThreads, 0, ctx.stream>>>(
      gy.data<float>(), gx.size(2), gx.size(3), gy.size(2), gy.size(3), total, gx.data<float>());
  DDP4J_CUDA_CHECK_LAUNCH("adaptive_avg_pool2d_backward");
}

}  // namespace

DDP4J_REGISTER_KERNEL(adaptive_avg_pool2d_forward, CUDA, forward);
DDP4J_REGISTER_KERNEL(adaptive_avg_pool2d_backward, CUDA, backward);

}  // namespace ddp4j::cuda
