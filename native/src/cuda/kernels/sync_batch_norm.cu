// CUDA SyncBatchNorm kernels (kernels.h: sync_batch_norm_*), the same formulas as
// src/cpu/sync_batch_norm.cpp; the collectives between them run on the group's NCCL stream.
//   stats:          per-channel shifted sums in double over a C x G grid (reduce.cuh), then one
//                   thread per channel writes its mean (two floats) and sum of squared deviations;
//   gather_stats:   one thread per channel combines the ranks' rows in double (Chan's variance)
//                   and updates the running statistics;
//   elemt / backward_elemt: one thread per element, grid-stride;
//   backward_reduce: per-channel Σ gy and Σ gy (x - mean) in double (reduce.cuh).
#include <cmath>

#include "cuda/cuda_context.h"
#include "cuda/kernels/batch_norm_sums.cuh"
#include "cuda/kernels/reduce.cuh"
#include "ddp4j/dispatch.h"
#include "ddp4j/kernels.h"

namespace ddp4j::cuda {
namespace {

constexpr double kTwo24 = 16777216.0;

/** x as [N, C, S]. */
struct Layout {
  int64_t N, C, S;
  explicit Layout(const Tensor& x) : N(x.size(0)), C(x.size(1)), S(1) {
    for (int d = 2; d < x.dim(); ++d) S *= x.size(d);
  }
};

__global__ void stats_finish(const double* partials, int G, const float* x, int64_t C, int64_t S, int64_t count,
                             float* out) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; c < C; c += stride) {
    float* mean_hi = out + 2;
    float* mean_lo = mean_hi + C;
    float* m2 = mean_lo + C;
    if (c == 0) {
      out[0] = static_cast<float>(floor(count / kTwo24));
      out[1] = static_cast<float>(count - static_cast<double>(out[0]) * kTwo24);
    }
    if (count == 0) {
      mean_hi[c] = mean_lo[c] = m2[c] = 0.0f;
      continue;
    }
    const double s1 = channel_total(partials, C, G, 0, c), s2 = channel_total(partials, C, G, 1, c);
    const double d_mean = s1 / count;
    const double mean = static_cast<double>(x[c * S]) + d_mean;
    mean_hi[c] = static_cast<float>(mean);
    mean_lo[c] = static_cast<float>(mean - static_cast<double>(mean_hi[c]));
    m2[c] = static_cast<float>(fmax(0.0, s2 - s1 * d_mean));
  }
}

__global__ void gather_kernel(const float* g, int64_t W, int64_t row, int64_t C, float* running_mean,
                              float* running_var, double momentum, double eps, float* save_mean,
                              float* save_mean_lo, float* save_invstd) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; c < C; c += stride) {
    double total = 0, mean = 0;
    for (int64_t r = 0; r < W; ++r) {
      const float* p = g + r * row;
      const double n = static_cast<double>(p[0]) * kTwo24 + p[1];
      total += n;
      mean += n * (static_cast<double>(p[2 + c]) + p[2 + C + c]);
    }
    mean /= total;
    double m2 = 0;
    for (int64_t r = 0; r < W; ++r) {
      const float* p = g + r * row;
      const double n = static_cast<double>(p[0]) * kTwo24 + p[1];
      if (n == 0) continue;
      const double d = (static_cast<double>(p[2 + c]) + p[2 + C + c]) - mean;
      m2 += p[2 + 2 * C + c] + n * d * d;
    }
    const double var = m2 / total;  // biased: used to normalise
    save_mean[c] = static_cast<float>(mean);
    save_mean_lo[c] = static_cast<float>(mean - static_cast<double>(save_mean[c]));
    save_invstd[c] = static_cast<float>(1.0 / sqrt(var + eps));
    if (running_mean != nullptr) {
      // Running statistics use the unbiased variance, as torch.nn.SyncBatchNorm.
      running_mean[c] = static_cast<float>((1 - momentum) * running_mean[c] + momentum * mean);
      running_var[c] = static_cast<float>((1 - momentum) * running_var[c] + momentum * (m2 / (total - 1)));
    }
  }
}

__global__ void elemt_kernel(const float* x, const float* mean, const float* mean_lo, const float* invstd,
                             const float* gamma, const float* beta, const float* residual, bool relu, int64_t n,
                             int64_t C, int64_t S, float* y) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const int64_t c = (i / S) % C;
    const float a = static_cast<float>(static_cast<double>(gamma[c]) * invstd[c]);
    float v = __fmaf_rn((x[i] - mean[c]) - mean_lo[c], a, beta[c]);
    if (residual != nullptr) v = v + residual[i];
    if (relu) v = v <= 0.0f ? 0.0f : v;  // relu_forward: NaN stays
    y[i] = v;
  }
}

__global__ void backward_reduce_finish(const double* partials, int G, int64_t C, const float* mean_lo,
                                       const float* invstd, float* sums, float* ggamma, float* gbeta) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; c < C; c += stride) {
    const double sg = channel_total(partials, C, G, 0, c);
    const double sxg = channel_total(partials, C, G, 1, c) - static_cast<double>(mean_lo[c]) * sg;
    sums[c] = static_cast<float>(sg);
    sums[C + c] = static_cast<float>(sxg);
    gbeta[c] = static_cast<float>(sg);
    ggamma[c] = static_cast<float>(sxg * invstd[c]);
  }
}

__global__ void backward_elemt_kernel(const float* gy, const float* x, const float* mean, const float* mean_lo,
                                      const float* invstd, const float* gamma, const float* sums, int64_t count,
                                      int64_t n, int64_t C, int64_t S, float* gx) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const int64_t c = (i / S) % C;
    // gx = gy * a + (x - mean) * b + d, as the CPU kernel, with the group's sums and count.
    const double is = invstd[c];
    const double scale = gamma[c] * is;
    const float a = static_cast<float>(scale);
    const float b = static_cast<float>(-scale * (sums[C + c] * is * is / count));
    const float d = static_cast<float>(-scale * (sums[c] / static_cast<double>(count)));
    gx[i] = gy[i] * a + ((x[i] - mean[c]) - mean_lo[c]) * b + d;
  }
}

void stats(const Tensor& x, Tensor& out) {
  const Layout l(x);
  if (l.C == 0) return;
  LaunchContext ctx(x);
  const int64_t count = l.N * l.S;
  const float* px = count > 0 ? x.data<float>() : nullptr;
  ChannelPartials parts = channel_partials(ShiftedSums{px, l.S}, count > 0 ? l.N : 0, l.C, l.S, ctx.device,
                                           ctx.stream, "sync_batch_norm_stats");
  stats_finish<<<grid_for(l.C, 128), 128, 0, ctx.stream>>>(parts.data, parts.G, px, l.C, l.S, count,
                                                           out.data<float>());
  DDP4J_CUDA_CHECK_LAUNCH("sync_batch_norm_stats (finish)");
}

void gather_stats(const Tensor& gathered, Tensor& running_mean, Tensor& running_var, double momentum, double eps,
                  Tensor& save_mean, Tensor& save_mean_lo, Tensor& save_invstd) {
  const int64_t W = gathered.size(0), row = gathered.size(1), C = save_mean.size(0);
  LaunchContext ctx(gathered);
  gather_kernel<<<grid_for(C, 128), 128, 0, ctx.stream>>>(
      gathered.data<float>(), W, row, C, running_mean.defined() ? running_mean.data<float>() : nullptr,
      running_var.defined() ? running_var.data<float>() : nullptr, momentum, eps, save_mean.data<float>(),
      save_mean_lo.data<float>(), save_invstd.data<float>());
  DDP4J_CUDA_CHECK_LAUNCH("sync_batch_norm_gather_stats");
}

void elemt(const Tensor& x, const Tensor& mean, const Tensor& mean_lo, const Tensor& invstd, const Tensor& gamma,
           const Tensor& beta, const Tensor& residual, bool relu, Tensor& y) {
  const Layout l(x);
  const int64_t n = x.numel();
  if (n == 0) return;
  LaunchContext ctx(x);
  elemt_kernel<<<grid_for(n), 256, 0, ctx.stream>>>(x.data<float>(), mean.data<float>(), mean_lo.data<float>(),
                                                    invstd.data<float>(), gamma.data<float>(), beta.data<float>(),
                                                    residual.defined() ? residual.data<float>() : nullptr, relu, n,
                                                    l.C, l.S, y.data<float>());
  DDP4J_CUDA_CHECK_LAUNCH("sync_batch_norm_elemt");
}

void backward_reduce(const Tensor& gy, const Tensor& x, const Tensor& mean, const Tensor& mean_lo,
                     const Tensor& invstd, Tensor& sums, Tensor& ggamma, Tensor& gbeta) {
  const Layout l(x);
  if (l.C == 0) return;
  LaunchContext ctx(x);
  const bool any = x.numel() > 0;
  ChannelPartials parts = channel_partials(
      GradSums{any ? gy.data<float>() : nullptr, any ? x.data<float>() : nullptr, mean.data<float>()},
      any ? l.N : 0, l.C, l.S, ctx.device, ctx.stream, "sync_batch_norm_backward_reduce");
  backward_reduce_finish<<<grid_for(l.C, 128), 128, 0, ctx.stream>>>(parts.data, parts.G, l.C, mean_lo.data<float>(),
                                                                     invstd.data<float>(), sums.data<float>(),
                                                                     ggamma.data<float>(), gbeta.data<float>());
  DDP4J_CUDA_CHECK_LAUNCH("sync_batch_norm_backward_reduce (finish)");
}

void backward_elemt(const Tensor& gy, const Tensor& x, const Tensor& mean, const Tensor& mean_lo,
                    const Tensor& invstd, const Tensor& gamma, const Tensor& sums, int64_t count, Tensor& gx) {
  const Layout l(x);
  const int64_t n = x.numel();
  if (n == 0) return;
  LaunchContext ctx(x);
  backward_elemt_kernel<<<grid_for(n), 256, 0, ctx.stream>>>(
      gy.data<float>(), x.data<float>(), mean.data<float>(), mean_lo.data<float>(), invstd.data<float>(),
      gamma.data<float>(), sums.data<float>(), count, n, l.C, l.S, gx.data<float>());
  DDP4J_CUDA_CHECK_LAUNCH("sync_batch_norm_backward_elemt");
}

}  // namespace

DDP4J_REGISTER_KERNEL(sync_batch_norm_stats, CUDA, stats);
DDP4J_REGISTER_KERNEL(sync_batch_norm_gather_stats, CUDA, gather_stats);
DDP4J_REGISTER_KERNEL(sync_batch_norm_elemt, CUDA, elemt);
DDP4J_REGISTER_KERNEL(sync_batch_norm_backward_reduce, CUDA, backward_reduce);
DDP4J_REGISTER_KERNEL(sync_batch_norm_backward_elemt, CUDA, backward_elemt);

}  // namespace ddp4j::cuda
