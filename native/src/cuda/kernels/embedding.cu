// CUDA embedding, as src/cpu/embedding.cpp: forward gathers rows of the weight; backward is a
// dense scatter-add without float atomics: thread (vocabulary slice, column c) walks every index
// in position order and adds gout[n, c] to the rows of its slice, so each gradient element is a
// sum in position order, the CPU kernel's order (the same bits).
//
// Indices live on the GPU, so one outside [0, V) cannot throw here: it is skipped (forward: a zero
// row) and recorded in the device's deferred-error word, which cuda::check_deferred_errors turns
// into an InvalidArgument at the next synchronisation (as the cross-entropy targets of loss.cu).
#include <algorithm>

#include "cuda/cuda_context.h"
#include "ddp4j/dispatch.h"
#include "ddp4j/transformer_kernels.h"

namespace ddp4j::cuda {
namespace {

constexpr int kThreads = 256;

__device__ __forceinline__ void record_bad_index(int64_t* error_word, int64_t v) {
  atomicCAS(reinterpret_cast<unsigned long long*>(error_word), static_cast<unsigned long long>(kNoDeferredError),
            static_cast<unsigned long long>(v));
}

/** out[n, c] = weight[index[n], c]: one thread per output element. */
__global__ void embedding_gather(const int64_t* index, const float* weight, int64_t n, int64_t v, int64_t d,
                                 float* out, int64_t* error_word) {
  const int64_t total = n * d;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < total; e += stride) {
    const int64_t i = e / d, c = e - i * d;
    const int64_t row = index[i];
    if (row < 0 || row >= v) {
      if (c == 0) record_bad_index(error_word, row);
      out[e] = 0.0f;
    } else {
      out[e] = weight[row * d + c];
    }
  }
}

/**
 * Block (column tile, vocabulary slice [v0, v1)): thread c adds gout[i, c] to gweight[index[i], c]
 * for every position i in order whose index lies in the slice and is not padding_idx. gweight
 * starts zeroed; no other thread touches those elements.
 */
__global__ void __launch_bounds__(kThreads) embedding_scatter_add(const float* gout, const int64_t* index, int64_t n,
                                                                  int64_t v, int64_t d, int64_t rows_per_slice,
                                                                  int64_t padding_idx, float* gweight,
                                                                  int64_t* error_word) {
  const int64_t c = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (c >= d) return;
  const int64_t v0 = static_cast<int64_t>(blockIdx.y) * rows_per_slice, v1 = min(v, v0 + rows_per_slice);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t row = index[i];  // the same address across the warp: one broadcast load
    if (row >= v0 && row < v1) {
      if (row != padding_idx) gweight[row * d + c] += gout[i * d + c];
    } else if ((row < 0 || row >= v) && blockIdx.y == 0 && c == 0) {
      record_bad_index(error_word, row);
    }
  }
}

void embedding_forward(const Tensor& index, const Tensor& weight, Tensor& out) {
  const int64_t n = index.numel(), v = weight.size(0), d = weight.size(1);
  if (n * d == 0) return;
  LaunchContext ctx(out);
  embedding_gather<<<grid_for(n * d, kThreads), kThreads, 0, ctx.stream>>>(
      index.data<int64_t>(), weight.data<float>(), n, v, d, out.data<float>(), deferred_error_word(ctx.device));
  DDP4J_CUDA_CHECK_LAUNCH("embedding");
}

void embedding_backward(const Tensor& gout, const Tensor& index, int64_t padding_idx, Tensor& gweight) {
  const int64_t n = index.numel(), v = gweight.size(0), d = gweight.size(1);
  if (v * d == 0) return;
  LaunchContext ctx(gweight);
  DDP4J_CUDA_CHECK(cudaMemsetAsync(gweight.raw_data(), 0, gweight.nbytes(), ctx.stream));
  if (n == 0) return;
  // Enough (tile, slice) blocks to fill a large GPU, about 64K threads; each walks all n indices.
  const int64_t tiles = (d + kThreads - 1) / kThreads;
  const int64_t slices = std::clamp<int64_t>(256 / tiles, 1, std::min<int64_t>(v, 65535));
  const int64_t rows_per_slice = (v + slices - 1) / slices;
  DDP4J_CHECK_ARG(tiles <= 0x7fffffff, "embedding_backward: embedding_dim ", d, " too large for one grid");
  embedding_scatter_add<<<dim3(static_cast<unsigned>(tiles), static_cast<unsigned>(slices)), kThreads, 0,
                          ctx.stream>>>(gout.data<float>(), index.data<int64_t>(), n, v, d, rows_per_slice,
                                        padding_idx, gweight.data<float>(), deferred_error_word(ctx.device));
  DDP4J_CUDA_CHECK_LAUNCH("embedding_backward");
}

}  // namespace

DDP4J_REGISTER_KERNEL(embedding_forward, CUDA, embedding_forward);
DDP4J_REGISTER_KERNEL(embedding_backward, CUDA, embedding_backward);

}  // namespace ddp4j::cuda
