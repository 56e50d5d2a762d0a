// CUDA kernels of torch.amp's helpers, as src/cpu/amp.cpp: rounding float32 values to bfloat16 /
// float16 and back (autocast's conv and linear operands: the ops layer rounds them and the float32
// kernels multiply them, so products are exact and sums float32, as a bf16 GEMM with float32
// accumulation), and GradScaler's unscale with the inf/NaN check.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "cuda/cuda_context.h"
#include "ddp4j/dispatch.h"
#include "ddp4j/kernels.h"

namespace ddp4j::cuda {
namespace {

constexpr int kThreads = 256;

__global__ void round_bf16_kernel(const float* x, float* y, int64_t n) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    y[i] = __bfloat162float(__float2bfloat16_rn(x[i]));
  }
}

__global__ void round_fp16_kernel(const float* x, float* y, int64_t n) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    y[i] = __half2float(__float2half_rn(x[i]));
  }
}

__global__ void unscale_kernel(float* x, float inv_scale, float* found, int64_t n) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const float v = x[i];
    if (!isfinite(v)) *found = 1.0f;  // every writer writes the same value
    x[i] = v * inv_scale;
  }
}

void round_to_low_precision(const Tensor& x, DType low, Tensor& out) {
  const int64_t n = x.numel();
  if (n == 0) return;
  LaunchContext ctx(x);
  if (low == DType::BFloat16) {
    round_bf16_kernel<<<grid_for(n, kThreads), kThreads, 0, ctx.stream>>>(x.data<float>(), out.data<float>(), n);
  } else {
    round_fp16_kernel<<<grid_for(n, kThreads), kThreads, 0, ctx.stream>>>(x.data<float>(), out.data<float>(), n);
  }
  DDP4J_CUDA_CHECK_LAUNCH("round_to_low_precision");
}

void non_finite_check_and_unscale(const Tensor& x, float inv_scale, Tensor& found) {
  const int64_t n = x.numel();
  if (n == 0) return;
  LaunchContext ctx(x);
  unscale_kernel<<<grid_for(n, kThreads), kThreads, 0, ctx.stream>>>(x.data<float>(), inv_scale,
                                                                     found.data<float>(), n);
  DDP4J_CUDA_CHECK_LAUNCH("non_finite_check_and_unscale");
}

}  // namespace

DDP4J_REGISTER_KERNEL(round_to_low_precision, CUDA, round_to_low_precision);
DDP4J_REGISTER_KERNEL(non_finite_check_and_unscale, CUDA, non_finite_check_and_unscale);

}  // namespace ddp4j::cuda
