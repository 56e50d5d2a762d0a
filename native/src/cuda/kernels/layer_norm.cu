// CUDA layer norm over x [R, D], the formulas of src/cpu/layer_norm.cpp:
//   forward:  one block per row: mean, then the biased variance around it (two passes, double
//             sums), rstd, and y = (x - mean) * rstd * weight + bias; mean and rstd saved;
//   backward: one block per row for dx = rstd * (g' - mean(g') - xhat * mean(g' * xhat)),
//             g' = gy * weight; dweight = Σ_r gy * xhat and dbias = Σ_r gy as a grid of
//             (column tile, slice of rows) blocks writing double partials that a finish kernel
//             adds per column in slice order. The slices depend only on the shape: deterministic.
#include <algorithm>

#include "cuda/cuda_context.h"
#include "cuda/kernels/reduce.cuh"
#include "cuda/kernels/row_reduce.cuh"
#include "ddp4j/dispatch.h"
#include "ddp4j/transformer_kernels.h"

namespace ddp4j::cuda {
namespace {

constexpr int kColumnTile = 32;  // columns per parameter-gradient block (one warp wide)
constexpr int kRowLanes = 8;     // rows a parameter-gradient block walks at once

__global__ void __launch_bounds__(kRowThreads) layer_norm_forward_rows(const float* x, const float* weight,
                                                                       const float* bias, int64_t d, double eps,
                                                                       float* y, float* mean, float* rstd) {
  const int64_t r = blockIdx.x;
  const float* xr = x + r * d;
  double sum = 0;
  for (int64_t c = threadIdx.x; c < d; c += kRowThreads) sum += xr[c];
  const double mu = row_block_sum(sum) / static_cast<double>(d);
  double sq = 0;  // around the mean: a mean large against the spread costs no precision
  for (int64_t c = threadIdx.x; c < d; c += kRowThreads) {
    const double dev = xr[c] - mu;
    sq += dev * dev;
  }
  const double var = row_block_sum(sq) / static_cast<double>(d);
  const float m = static_cast<float>(mu);
  const float rs = static_cast<float>(1.0 / sqrt(var + eps));
  if (threadIdx.x == 0) {
    mean[r] = m;
    rstd[r] = rs;
  }
  float* yr = y + r * d;
  for (int64_t c = threadIdx.x; c < d; c += kRowThreads) {
    float v = (xr[c] - m) * rs;
    if (weight != nullptr) v *= weight[c];
    if (bias != nullptr) v += bias[c];
    yr[c] = v;
  }
}

__global__ void __launch_bounds__(kRowThreads) layer_norm_backward_rows(const float* gy, const float* x,
                                                                        const float* mean, const float* rstd,
                                                                        const float* weight, int64_t d, float* dx) {
  const int64_t r = blockIdx.x;
  const float* g = gy + r * d;
  const float* xr = x + r * d;
  const float m = mean[r], rs = rstd[r];
  double sum_g = 0, sum_gx = 0;
  for (int64_t c = threadIdx.x; c < d; c += kRowThreads) {
    const float xhat = (xr[c] - m) * rs;
    const float gw = weight != nullptr ? g[c] * weight[c] : g[c];
    sum_g += gw;
    sum_gx += static_cast<double>(gw) * xhat;
  }
  const float mean_g = static_cast<float>(row_block_sum(sum_g) / static_cast<double>(d));
  const float mean_gx = static_cast<float>(row_block_sum(sum_gx) / static_cast<double>(d));
  float* out = dx + r * d;
  for (int64_t c = threadIdx.x; c < d; c += kRowThreads) {
    const float xhat = (xr[c] - m) * rs;
    const float gw = weight != nullptr ? g[c] * weight[c] : g[c];
    out[c] = rs * (gw - mean_g - xhat * mean_gx);
  }
}

/**
 * Block (tile, slice): columns [tile * 32, +32) over the rows of slice `slice` ([slice * per, +per)).
 * partials[slice * 2d + c] = Σ gy * xhat, partials[slice * 2d + d + c] = Σ gy, in double.
 */
__global__ void __launch_bounds__(kColumnTile * kRowLanes) layer_norm_param_partials(
    const float* gy, const float* x, const float* mean, const float* rstd, int64_t rows, int64_t d, int64_t per,
    double* partials) {
  __shared__ double sw[kRowLanes][kColumnTile], sb[kRowLanes][kColumnTile];
  const int64_t c = static_cast<int64_t>(blockIdx.x) * kColumnTile + threadIdx.x;
  const int64_t slice = blockIdx.y;
  const int64_t r_begin = slice * per, r_end = min(rows, r_begin + per);
  double w = 0, b = 0;
  if (c < d) {
    for (int64_t r = r_begin + threadIdx.y; r < r_end; r += kRowLanes) {
      const float g = gy[r * d + c];
      const float xhat = (x[r * d + c] - mean[r]) * rstd[r];
      w += static_cast<double>(g) * xhat;
      b += g;
    }
  }
  sw[threadIdx.y][threadIdx.x] = w;
  sb[threadIdx.y][threadIdx.x] = b;
  __syncthreads();
  if (threadIdx.y == 0 && c < d) {
    for (int k = 1; k < kRowLanes; ++k) {  // lanes in order: a fixed sum
      w += sw[k][threadIdx.x];
      b += sb[k][threadIdx.x];
    }
    partials[slice * 2 * d + c] = w;
    partials[slice * 2 * d + d + c] = b;
  }
}

__global__ void layer_norm_param_finish(const double* partials, int64_t d, int64_t slices, float* dweight,
                                        float* dbias) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; c < d; c += stride) {
    double w = 0, b = 0;
    for (int64_t s = 0; s < slices; ++s) {
      w += partials[s * 2 * d + c];
      b += partials[s * 2 * d + d + c];
    }
    if (dweight != nullptr) dweight[c] = static_cast<float>(w);
    if (dbias != nullptr) dbias[c] = static_cast<float>(b);
  }
}

void check_grid(int64_t rows, const char* op) {
  DDP4J_CHECK_ARG(rows <= 0x7fffffff, op, ": ", rows, " rows are too many for one grid");
}

void layer_norm_forward(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps, Tensor& y,
                        Tensor& mean, Tensor& rstd) {
  const int64_t d = x.size(-1), rows = d == 0 ? 0 : x.numel() / d;
  if (rows == 0) return;
  check_grid(rows, "layer_norm");
  LaunchContext ctx(y);
  layer_norm_forward_rows<<<static_cast<unsigned>(rows), kRowThreads, 0, ctx.stream>>>(
      x.data<float>(), weight.defined() ? weight.data<float>() : nullptr,
      bias.defined() ? bias.data<float>() : nullptr, d, eps, y.data<float>(), mean.data<float>(),
      rstd.data<float>());
  DDP4J_CUDA_CHECK_LAUNCH("layer_norm");
}

void layer_norm_backward(const Tensor& gy, const Tensor& x, const Tensor& mean, const Tensor& rstd,
                         const Tensor& weight, Tensor& dx, Tensor& dweight, Tensor& dbias) {
  const int64_t d = x.size(-1), rows = d == 0 ? 0 : x.numel() / d;
  if (d == 0) return;
  check_grid(rows, "layer_norm_backward");
  LaunchContext ctx(dx);
  if (rows > 0) {
    layer_norm_backward_rows<<<static_cast<unsigned>(rows), kRowThreads, 0, ctx.stream>>>(
        gy.data<float>(), x.data<float>(), mean.data<float>(), rstd.data<float>(),
        weight.defined() ? weight.data<float>() : nullptr, d, dx.data<float>());
    DDP4J_CUDA_CHECK_LAUNCH("layer_norm_backward");
  }
  if (!dweight.defined() && !dbias.defined()) return;
  // Slices of about 256 rows, at most 256 of them (a finish thread adds few partials).
  const int64_t slices = std::clamp<int64_t>((rows + 255) / 256, 1, 256);
  const int64_t per = std::max<int64_t>((rows + slices - 1) / slices, 1);
  const int64_t tiles = (d + kColumnTile - 1) / kColumnTile;
  DDP4J_CHECK_ARG(tiles <= 0x7fffffff, "layer_norm_backward: normalized size ", d, " too large for one grid");
  Tensor scratch = double_scratch(slices * 2 * d, ctx.device);
  double* pp = reinterpret_cast<double*>(scratch.raw_data());
  layer_norm_param_partials<<<dim3(static_cast<unsigned>(tiles), static_cast<unsigned>(slices)),
                              dim3(kColumnTile, kRowLanes), 0, ctx.stream>>>(
      rows > 0 ? gy.data<float>() : nullptr, rows > 0 ? x.data<float>() : nullptr, mean.data<float>(),
      rstd.data<float>(), rows, d, per, pp);
  DDP4J_CUDA_CHECK_LAUNCH("layer_norm_backward (parameter partials)");
  layer_norm_param_finish<<<grid_for(d, 128), 128, 0, ctx.stream>>>(
      pp, d, slices, dweight.defined() ? dweight.data<float>() : nullptr,
      dbias.defined() ? dbias.data<float>() : nullptr);
  DDP4J_CUDA_CHECK_LAUNCH("layer_norm_backward (parameter sums)");
}

}  // namespace

DDP4J_REGISTER_KERNEL(layer_norm_forward, CUDA, layer_norm_forward);
DDP4J_REGISTER_KERNEL(layer_norm_backward, CUDA, layer_norm_backward);

}  // namespace ddp4j::cuda
