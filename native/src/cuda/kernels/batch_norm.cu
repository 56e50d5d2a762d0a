// CUDA BatchNorm2d over x[N, C, H, W], same formulas as src/cpu/batch_norm.cpp:
//   statistics: per-channel sums in double over a C x G grid of blocks (reduce.cuh: block
//               reductions, then one thread per channel adds its G partials in a fixed order);
//               sums are shifted by the channel's first value, as on the CPU, so a large mean
//               does not cancel the variance;
//   coefficients: one thread per channel computes mean, invstd, the running statistics update
//               (unbiased variance, momentum) and the affine coefficients, in double;
//   apply:      y = x * a[c] + b[c] (backward: gx = gy * a + (x - mean) * b + d), one thread per
//               element, blocks laid over (plane, part of plane) so the channel costs one division
//               per thread.
#include <cmath>

#include "cuda/cuda_context.h"
#include "cuda/kernels/batch_norm_sums.cuh"
#include "cuda/kernels/reduce.cuh"
#include "ddp4j/dispatch.h"
#include "ddp4j/kernels.h"

namespace ddp4j::cuda {
namespace {

constexpr int kThreads = 256;

/** Per channel: batch mean / invstd, running statistics, and y = x * coef[c] + coef[C + c]. */
__global__ void train_coefficients(const double* partials, int G, const float* x, int64_t C, int64_t HW,
                                   int64_t count, const float* gamma, const float* beta, float* running_mean,
                                   float* running_var, double momentum, double eps, float* save_mean,
                                   float* save_invstd, float* coef) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; c < C; c += stride) {
    const double s1 = channel_total(partials, C, G, 0, c), s2 = channel_total(partials, C, G, 1, c);
    const double k = x[c * HW];
    const double d_mean = s1 / count;
    const double mean = k + d_mean;
    const double var = fmax(0.0, s2 / count - d_mean * d_mean);  // biased: used to normalise
    const double invstd = 1.0 / sqrt(var + eps);
    save_mean[c] = static_cast<float>(mean);
    save_invstd[c] = static_cast<float>(invstd);
    const double ac = gamma[c] * invstd;
    coef[c] = static_cast<float>(ac);
    coef[C + c] = static_cast<float>(beta[c] - mean * ac);
    // Running statistics use the unbiased variance, as torch.nn.BatchNorm2d.
    const double unbiased = var * static_cast<double>(count) / static_cast<double>(count - 1);
    running_mean[c] = static_cast<float>((1 - momentum) * running_mean[c] + momentum * mean);
    running_var[c] = static_cast<float>((1 - momentum) * running_var[c] + momentum * unbiased);
  }
}

/** Per channel, from the running statistics: y = x * coef[c] + coef[C + c]. */
__global__ void eval_coefficients(const float* gamma, const float* beta, const float* running_mean,
                                  const float* running_var, int64_t C, double eps, float* coef) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; c < C; c += stride) {
    const double a = gamma[c] / sqrt(static_cast<double>(running_var[c]) + eps);
    coef[c] = static_cast<float>(a);
    coef[C + c] = static_cast<float>(beta[c] - running_mean[c] * a);
  }
}

/** Per channel: gbeta, ggamma, and gx = gy * coef[c] + (x - mean) * coef[C + c] + coef[2C + c]. */
__global__ void backward_coefficients(const double* partials, int G, int64_t C, int64_t count, const float* gamma,
                                      const float* save_invstd, float* ggamma, float* gbeta, float* coef) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; c < C; c += stride) {
    const double sg = channel_total(partials, C, G, 0, c), sxg = channel_total(partials, C, G, 1, c);
    const double invstd = save_invstd[c];
    gbeta[c] = static_cast<float>(sg);
    ggamma[c] = static_cast<float>(sxg * invstd);
    // gx = gamma * invstd * (gy - mean(gy) - xhat * mean(gy * xhat)); x - mean is formed first
    // so a large mean does not cancel.
    const double scale = gamma[c] * invstd;
    const double k = count > 0 ? sxg * invstd * invstd / count : 0.0;
    const double gmean = count > 0 ? sg / count : 0.0;
    coef[c] = static_cast<float>(scale);
    coef[C + c] = static_cast<float>(-scale * k);
    coef[2 * C + c] = static_cast<float>(-scale * gmean);
  }
}

/** y = x * coef[c] + coef[C + c]; block = (plane, part of the plane), one element per thread. */
__global__ void __launch_bounds__(kThreads) apply_affine(const float* x, const float* coef, int64_t C, int64_t HW,
                                                         int64_t parts, float* y) {
  const int64_t plane = blockIdx.x / parts;
  const int64_t j = (blockIdx.x % parts) * kThreads + threadIdx.x;
  if (j >= HW) return;
  const int64_t c = plane % C;
  const int64_t i = plane * HW + j;
  y[i] = x[i] * coef[c] + coef[C + c];
}

/** gx = gy * coef[c] + (x - mean[c]) * coef[C + c] + coef[2C + c]. */
__global__ void __launch_bounds__(kThreads) apply_backward(const float* gy, const float* x, const float* mean,
                                                           const float* coef, int64_t C, int64_t HW, int64_t parts,
                                                           float* gx) {
  const int64_t plane = blockIdx.x / parts;
  const int64_t j = (blockIdx.x % parts) * kThreads + threadIdx.x;
  if (j >= HW) return;
  const int64_t c = plane % C;
  const int64_t i = plane * HW + j;
  gx[i] = gy[i] * coef[c] + (x[i] - mean[c]) * coef[C + c] + coef[2 * C + c];
}

/** Blocks for a per-plane launch: planes * ceil(HW / kThreads) (0 when there is nothing to do). */
int64_t plane_blocks(int64_t planes, int64_t HW, int64_t& parts, const char* op) {
  parts = (HW + kThreads - 1) / kThreads;
  const int64_t blocks = planes * parts;
  DDP4J_CHECK_ARG(blocks <= 0x7fffffff, op, ": input too large for one grid");
  return blocks;
}

void forward_train(const Tensor& x, const Tensor& gamma, const Tensor& beta, Tensor& running_mean,
                   Tensor& running_var, double momentum, double eps, Tensor& y, Tensor& save_mean,
                   Tensor& save_invstd, Tensor& /*affine: undefined on CUDA (no recompute there)*/) {
  const int64_t N = x.size(0), C = x.size(1), HW = x.size(2) * x.size(3), count = N * HW;
  if (C == 0) return;
  LaunchContext ctx(x);
  const float* px = x.data<float>();
  ChannelPartials parts = channel_partials(ShiftedSums{px, HW}, N, C, HW, ctx.device, ctx.stream,
                                           "batch_norm2d (statistics)");
  Tensor coef = Tensor::empty({2 * C}, DType::Float32, x.device());
  train_coefficients<<<grid_for(C, 128), 128, 0, ctx.stream>>>(
      parts.data, parts.G, px, C, HW, count, gamma.data<float>(), beta.data<float>(), running_mean.data<float>(),
      running_var.data<float>(), momentum, eps, save_mean.data<float>(), save_invstd.data<float>(),
      coef.data<float>());
  DDP4J_CUDA_CHECK_LAUNCH("batch_norm2d (coefficients)");
  int64_t nparts;
  const int64_t blocks = plane_blocks(N * C, HW, nparts, "batch_norm2d");
  if (blocks == 0) return;
  apply_affine<<<static_cast<unsigned>(blocks), kThreads, 0, ctx.stream>>>(px, coef.data<float>(), C, HW, nparts,
                                                                          y.data<float>());
  DDP4J_CUDA_CHECK_LAUNCH("batch_norm2d");
}

void forward_eval(const Tensor& x, const Tensor& gamma, const Tensor& beta, const Tensor& running_mean,
                  const Tensor& running_var, double eps, Tensor& y) {
  const int64_t N = x.size(0), C = x.size(1), HW = x.size(2) * x.size(3);
  if (C == 0) return;
  LaunchContext ctx(x);
  Tensor coef = Tensor::empty({2 * C}, DType::Float32, x.device());
  eval_coefficients<<<grid_for(C, 128), 128, 0, ctx.stream>>>(gamma.data<float>(), beta.data<float>(),
                                                               running_mean.data<float>(), running_var.data<float>(),
                                                               C, eps, coef.data<float>());
  DDP4J_CUDA_CHECK_LAUNCH("batch_norm2d (eval coefficients)");
  int64_t nparts;
  const int64_t blocks = plane_blocks(N * C, HW, nparts, "batch_norm2d");
  if (blocks == 0) return;
  apply_affine<<<static_cast<unsigned>(blocks), kThreads, 0, ctx.stream>>>(x.data<float>(), coef.data<float>(), C,
                                                                          HW, nparts, y.data<float>());
  DDP4J_CUDA_CHECK_LAUNCH("batch_norm2d (eval)");
}

void backward(const Tensor& gy, const Tensor& x, const Tensor& gamma, const Tensor& save_mean,
              const Tensor& save_invstd, Tensor& gx, Tensor& ggamma, Tensor& gbeta) {
  const int64_t N = x.size(0), C = x.size(1), HW = x.size(2) * x.size(3), count = N * HW;
  if (C == 0) return;
  LaunchContext ctx(x);
  const float* px = count > 0 ? x.data<float>() : nullptr;
  const float* pgy = count > 0 ? gy.data<float>() : nullptr;
  ChannelPartials parts = channel_partials(GradSums{pgy, px, save_mean.data<float>()}, N, C, HW, ctx.device,
                                           ctx.stream, "batch_norm2d_backward (sums)");
  Tensor coef = Tensor::empty({3 * C}, DType::Float32, x.device());
  backward_coefficients<<<grid_for(C, 128), 128, 0, ctx.stream>>>(parts.data, parts.G, C, count,
                                                                   gamma.data<float>(), save_invstd.data<float>(),
                                                                   ggamma.data<float>(), gbeta.data<float>(),
                                                                   coef.data<float>());
  DDP4J_CUDA_CHECK_LAUNCH("batch_norm2d_backward (coefficients)");
  int64_t nparts;
  const int64_t blocks = plane_blocks(N * C, HW, nparts, "batch_norm2d_backward");
  if (blocks == 0) return;
  apply_backward<<<static_cast<unsigned>(blocks), kThreads, 0, ctx.stream>>>(
      pgy, px, save_mean.data<float>(), coef.data<float>(), C, HW, nparts, gx.data<float>());
  DDP4J_CUDA_CHECK_LAUNCH("batch_norm2d_backward");
}

}  // namespace

DDP4J_REGISTER_KERNEL(batch_norm2d_forward_train, CUDA, forward_train);
DDP4J_REGISTER_KERNEL(batch_norm2d_forward_eval, CUDA, forward_eval);
DDP4J_REGISTER_KERNEL(batch_norm2d_backward, CUDA, backward);

}  // namespace ddp4j::cuda
