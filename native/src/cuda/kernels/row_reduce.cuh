// row_reduce.cuh: block-wide reductions whose result every thread of the block receives, for the
// kernels that give one block to one row (layer norm, cross entropy with logsumexp). The tree has
// a fixed shape (warp shuffles, then one warp over the warp results), so the bits depend only on
// blockDim.x, never on scheduling. Every thread of the block must call them (they synchronise).
#pragma once
#include <cuda_runtime.h>

namespace ddp4j::cuda {

/** Threads of a row block: a multiple of 32, at most 1024. */
constexpr int kRowThreads = 256;

/** Σ v over the block (blockDim.x == kRowThreads), returned to every thread. */
__device__ __forceinline__ double row_block_sum(double v) {
  __shared__ double warp_part[kRowThreads / 32];
  __shared__ double total;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
  if (lane == 0) warp_part[warp] = v;
  __syncthreads();
  if (warp == 0) {
    double w = lane < kRowThreads / 32 ? warp_part[lane] : 0.0;
    for (int o = 16; o > 0; o >>= 1) w += __shfl_down_sync(0xffffffffu, w, o);
    if (lane == 0) total = w;
  }
  __syncthreads();
  const double result = total;
  __syncthreads();  // the next call may overwrite warp_part and total
  return result;
}

/** max v over the block (blockDim.x == kRowThreads), returned to every thread; NaN-free inputs assumed. */
__device__ __forceinline__ float row_block_max(float v) {
  __shared__ float warp_part[kRowThreads / 32];
  __shared__ float total;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_down_sync(0xffffffffu, v, o));
  if (lane == 0) warp_part[warp] = v;
  __syncthreads();
  if (warp == 0) {
    float w = lane < kRowThreads / 32 ? warp_part[lane] : -INFINITY;
    for (int o = 16; o > 0; o >>= 1) w = fmaxf(w, __shfl_down_sync(0xffffffffu, w, o));
    if (lane == 0) total = w;
  }
  __syncthreads();
  const float result = total;
  __syncthreads();
  return result;
}

}  // namespace ddp4j::cuda
