// CUDA GELU, exact (erf) and tanh-approximated, forward and backward, one thread per element with
// the formulas of src/cpu/gelu.cpp.
#include "cuda/cuda_context.h"
#include "ddp4j/dispatch.h"
#include "ddp4j/transformer_kernels.h"

namespace ddp4j::cuda {
namespace {

constexpr int kThreads = 256;
constexpr float kSqrtHalf = 0.70710678118654752f;     // 1 / sqrt(2)
constexpr float kInvSqrt2Pi = 0.39894228040143268f;   // 1 / sqrt(2 pi)
constexpr float kSqrt2OverPi = 0.79788456080286536f;  // sqrt(2 / pi)
constexpr float kCubic = 0.044715f;

__global__ void gelu_forward_kernel(const float* x, int64_t n, bool tanh_form, float* y) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const float v = x[i];
    y[i] = tanh_form ? 0.5f * v * (1.0f + tanhf(kSqrt2OverPi * (v + kCubic * v * v * v)))
                     : 0.5f * v * (1.0f + erff(v * kSqrtHalf));
  }
}

__global__ void gelu_backward_kernel(const float* gy, const float* x, int64_t n, bool tanh_form, float* gx) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const float v = x[i];
    float d;
    if (tanh_form) {
      const float t = tanhf(kSqrt2OverPi * (v + kCubic * v * v * v));
      const float dinner = kSqrt2OverPi * (1.0f + 3.0f * kCubic * v * v);
      d = 0.5f * (1.0f + t) + 0.5f * v * (1.0f - t * t) * dinner;
    } else {
      const float cdf = 0.5f * (1.0f + erff(v * kSqrtHalf));
      const float pdf = kInvSqrt2Pi * expf(-0.5f * v * v);
      d = cdf + v * pdf;
    }
    gx[i] = gy[i] * d;
  }
}

void gelu_forward(const Tensor& x, bool tanh_form, Tensor& y) {
  const int64_t n = x.numel();
  if (n == 0) return;
  LaunchContext ctx(y);
  gelu_forward_kernel<<<grid_for(n, kThreads), kThreads, 0, ctx.stream>>>(x.data<float>(), n, tanh_form,
                                                                          y.data<float>());
  DDP4J_CUDA_CHECK_LAUNCH("gelu");
}

void gelu_backward(const Tensor& gy, const Tensor& x, bool tanh_form, Tensor& gx) {
  const int64_t n = x.numel();
  if (n == 0) return;
  LaunchContext ctx(gx);
  gelu_backward_kernel<<<grid_for(n, kThreads), kThreads, 0, ctx.stream>>>(gy.data<float>(), x.data<float>(), n,
                                                                           tanh_form, gx.data<float>());
  DDP4J_CUDA_CHECK_LAUNCH("gelu_backward");
}

}  // namespace

DDP4J_REGISTER_KERNEL(gelu_forward, CUDA, gelu_forward);
DDP4J_REGISTER_KERNEL(gelu_backward, CUDA, gelu_backward);

}  // namespace ddp4j::cuda
