// reduce.cuh: the reductions the CUDA kernels share, all accumulating in double and all
// deterministic (fixed-shape trees and fixed-order partial sums, no atomics on one address):
//   - warp_sum / block_sum2: shuffle reductions inside a warp / a block;
//   - reduce_all: Σ_i op(i) over a flat range in two passes (block partials, then one block);
//   - channel_partials: per-channel sums over x[N, C, HW] (BatchNorm statistics, conv and linear
//     bias gradients) as a C x G grid of blocks whose partials a per-channel finish kernel adds.
// Scratch (the double partials) comes from Tensor::empty on the tensor's device, i.e. from the
// caching allocator, stream-ordered on the compute stream.
#pragma once
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "cuda/cuda_context.h"
#include "ddp4j/tensor.h"

namespace ddp4j::cuda {

/** Threads per block of every reduction kernel here (a multiple of 32, at most 1024). */
constexpr int kReduceThreads = 256;

__device__ __forceinline__ double warp_sum(double v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
  return v;
}

/**
 * Sums a and b over the block (blockDim.x == kReduceThreads). The totals are valid in thread 0
 * only. Contains __syncthreads: every thread of the block must call it.
 */
__device__ __forceinline__ void block_sum2(double& a, double& b) {
  __shared__ double sa[kReduceThreads / 32], sb[kReduceThreads / 32];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  a = warp_sum(a);
  b = warp_sum(b);
  if (lane == 0) {
    sa[warp] = a;
    sb[warp] = b;
  }
  __syncthreads();
  if (warp == 0) {
    a = lane < kReduceThreads / 32 ? sa[lane] : 0.0;
    b = lane < kReduceThreads / 32 ? sb[lane] : 0.0;
    a = warp_sum(a);
    b = warp_sum(b);
  }
}

/** A double scratch buffer of n elements on device (int64 storage: tensors have no double dtype). */
inline Tensor double_scratch(int64_t n, int device) {
  return Tensor::empty({std::max<int64_t>(n, 1)}, DType::Int64, Device{DeviceType::CUDA, device});
}

// ---- reduce_all ----------------------------------------------------------------------------------

template <class Op>
__global__ void __launch_bounds__(kReduceThreads) reduce_all_partials(Op op, int64_t n, double* partials) {
  double s = 0.0, unused = 0.0;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) s += op(i);
  block_sum2(s, unused);
  if (threadIdx.x == 0) partials[blockIdx.x] = s;
}

/**
 * out[0] = float(Σ partials / divisor), the partials added by one block in a fixed order. (A
 * template so that each translation unit gets its own copy: there is no device linking.)
 */
template <int Unused = 0>
__global__ void __launch_bounds__(kReduceThreads) reduce_all_finish(const double* partials, int count, double divisor,
                                                                   float* out) {
  double s = 0.0, unused = 0.0;
  for (int i = threadIdx.x; i < count; i += kReduceThreads) s += partials[i];
  block_sum2(s, unused);
  if (threadIdx.x == 0) out[0] = static_cast<float>(s / divisor);
}

/**
 * *out = float((Σ_{i < n} op(i)) / divisor), op(i) a double; launched on `stream` of `device`
 * (current). Two kernels: at most kMaxReduceBlocks block partials, then one block adds them.
 */
constexpr int kMaxReduceBlocks = 1024;
template <class Op>
void reduce_all(Op op, int64_t n, double divisor, float* out, int device, cudaStream_t stream, const char* name) {
  const int blocks = static_cast<int>(std::min<int64_t>(std::max<int64_t>((n + 4 * kReduceThreads - 1) /
                                                                              (4 * kReduceThreads), 1),
                                                        kMaxReduceBlocks));
  Tensor partials = double_scratch(blocks, device);
  double* pp = reinterpret_cast<double*>(partials.raw_data());
  reduce_all_partials<Op><<<blocks, kReduceThreads, 0, stream>>>(op, n, pp);
  DDP4J_CUDA_CHECK_LAUNCH(name);
  reduce_all_finish<><<<1, kReduceThreads, 0, stream>>>(pp, blocks, divisor, out);
  DDP4J_CUDA_CHECK_LAUNCH(name);
}

// ---- channel_partials ----------------------------------------------------------------------------

/**
 * Block (c, g) adds op(offset, c, s1, s2) over the elements of channel c of x[N, C, HW] whose flat
 * index e = n * HW + j within the channel falls in slice g ([g * per, (g + 1) * per)), and writes
 * its two sums to partials[c * G + g] and partials[(C + c) * G + g]. Consecutive threads take
 * consecutive e, so reads are coalesced within a plane; (n, j) is advanced without divisions.
 */
template <class Op>
__global__ void __launch_bounds__(kReduceThreads) channel_partials_kernel(Op op, int64_t N, int64_t C, int64_t HW,
                                                                         int64_t per, double* partials) {
  const int64_t c = blockIdx.x, g = blockIdx.y, G = gridDim.y;
  const int64_t total = N * HW;
  const int64_t begin = g * per, end = min(total, begin + per);
  double s1 = 0.0, s2 = 0.0;
  int64_t e = begin + threadIdx.x;
  if (e < end) {
    int64_t n = e / HW, j = e % HW;
    const int64_t dn = kReduceThreads / HW, dj = kReduceThreads % HW;
    for (; e < end; e += kReduceThreads) {
      op((n * C + c) * HW + j, c, s1, s2);
      j += dj;
      n += dn;
      if (j >= HW) {
        j -= HW;
        ++n;
      }
    }
  }
  block_sum2(s1, s2);
  if (threadIdx.x == 0) {
    partials[c * G + g] = s1;
    partials[(C + c) * G + g] = s2;
  }
}

/** The partials of a channel reduction: sums 1 at [c * G + g], sums 2 at [(C + c) * G + g]. */
struct ChannelPartials {
  Tensor scratch;  // keeps the buffer alive until the finishing kernel is launched
  const double* data;
  int G;
};

/**
 * Launches channel_partials_kernel over x[N, C, HW] (C >= 1). G slices per channel: enough blocks
 * to fill the GPU at about 4096 elements each, at most 1024 (so a finish thread adds few values).
 */
template <class Op>
ChannelPartials channel_partials(Op op, int64_t N, int64_t C, int64_t HW, int device, cudaStream_t stream,
                                 const char* name) {
  const int64_t total = N * HW;
  const int64_t G = std::clamp<int64_t>((total + 4095) / 4096, 1, 1024);
  const int64_t per = std::max<int64_t>((total + G - 1) / G, 1);
  DDP4J_CHECK_ARG(C <= 0x7fffffff, name, ": too many channels (", C, ")");
  ChannelPartials out{double_scratch(2 * C * G, device), nullptr, static_cast<int>(G)};
  double* pp = reinterpret_cast<double*>(out.scratch.raw_data());
  out.data = pp;
  if (C == 0) return out;  // no channels: nothing to launch (a grid of 0 blocks is an error)
  channel_partials_kernel<Op><<<dim3(static_cast<unsigned>(C), static_cast<unsigned>(G)), kReduceThreads, 0,
                                stream>>>(op, N, C, HW, per, pp);
  DDP4J_CUDA_CHECK_LAUNCH(name);
  return out;
}

/** Adds channel c's G partials of sum `which` (0 or 1) in slice order. */
__device__ __forceinline__ double channel_total(const double* partials, int64_t C, int G, int which, int64_t c) {
  const double* p = partials + (which * C + c) * G;
  double s = 0.0;
  for (int g = 0; g < G; ++g) s += p[g];
  return s;
}

struct ReadChannelValue {
  const float* p;
  __device__ void operator()(int64_t off, int64_t, double& s1, double&) const { s1 += static_cast<double>(p[off]); }
};

template <int Unused = 0>
__global__ void channel_sums_finish(const double* partials, int64_t C, int G, float* out) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; c < C; c += stride) {
    out[c] = static_cast<float>(channel_total(partials, C, G, 0, c));
  }
}

/**
 * out[c] = Σ_{n, j} x[n, c, j] over x[N, C, HW], accumulated in double (bias gradients of conv,
 * with HW = P*Q, and of linear, with HW = 1). Deterministic.
 */
inline void channel_sums(const float* x, int64_t N, int64_t C, int64_t HW, float* out, int device,
                         cudaStream_t stream, const char* name) {
  if (C == 0) return;
  ChannelPartials parts = channel_partials(ReadChannelValue{x}, N, C, HW, device, stream, name);
  channel_sums_finish<><<<grid_for(C, 128), 128, 0, stream>>>(parts.data, C, parts.G, out);
  DDP4J_CUDA_CHECK_LAUNCH(name);
}

}  // namespace ddp4j::cuda
