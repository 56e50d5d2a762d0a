// indexing.cuh: what the CUDA kernels of the tensor-op families (broadcast, shape, matmul) share to
// walk a contiguous output while reading operands through other strides: a small fixed-size
// stride table passed by value to the kernel, dimension coalescing on the host (so most tables
// have one or two dimensions), and a dispatch on the element size for kernels that only move bits.
#pragma once
#include <cuda_runtime.h>

#include <array>
#include <cstdint>
#include <vector>

#include "ddp4j/errors.h"
#include "ddp4j/tensor.h"

namespace ddp4j::cuda {

/** Most dimensions a strided walk takes after coalescing (a kernel argument holds them by value). */
constexpr int kMaxDims = 12;

/**
 * The shape of a contiguous output and, for each of N operands, its element stride along each
 * dimension (0 where it is broadcast). offset(k, flat) is operand k's element for output `flat`.
 */
template <int N>
struct StridedWalk {
  int ndim = 0;
  int64_t size[kMaxDims] = {};
  int64_t stride[N][kMaxDims] = {};

  __device__ __forceinline__ void offsets(int64_t flat, int64_t (&out)[N]) const {
#pragma unroll
    for (int k = 0; k < N; ++k) out[k] = 0;
    for (int d = ndim - 1; d >= 0; --d) {
      const int64_t s = size[d];
      const int64_t i = flat % s;
      flat /= s;
#pragma unroll
      for (int k = 0; k < N; ++k) out[k] += i * stride[k][d];
    }
  }
};

/**
 * Builds the walk for output `shape` and operand strides (one vector per operand, one entry per
 * dimension of shape): size-1 dimensions dropped, neighbours merged where every operand steps
 * through them as through one dimension. Throws InvalidArgument naming `op` when more than
 * kMaxDims dimensions remain.
 */
template <int N>
StridedWalk<N> make_walk(const char* op, const Shape& shape, const std::array<std::vector<int64_t>, N>& strides) {
  std::vector<int64_t> sizes;
  std::array<std::vector<int64_t>, N> st;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    bool merge = !sizes.empty();
    for (int k = 0; k < N && merge; ++k) merge = st[k].back() == strides[k][d] * shape[d];
    if (merge) {
      sizes.back() *= shape[d];
      for (int k = 0; k < N; ++k) st[k].back() = strides[k][d];
    } else {
      sizes.push_back(shape[d]);
      for (int k = 0; k < N; ++k) st[k].push_back(strides[k][d]);
    }
  }
  DDP4J_CHECK_ARG(sizes.size() <= static_cast<size_t>(kMaxDims), op, ": ", sizes.size(),
                  " dimensions remain after merging; the CUDA kernel takes at most ", kMaxDims);
  StridedWalk<N> w;
  w.ndim = static_cast<int>(sizes.size());
  for (int d = 0; d < w.ndim; ++d) {
    w.size[d] = sizes[d];
    for (int k = 0; k < N; ++k) w.stride[k][d] = st[k][d];
  }
  return w;
}

/** Row-major element strides of a contiguous tensor of `shape`. */
inline std::vector<int64_t> contiguous_strides(const Shape& shape) {
  std::vector<int64_t> s(shape.size());
  int64_t step = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    s[d] = step;
    step *= shape[d];
  }
  return s;
}

/** Calls fn with a null pointer of the unsigned type as wide as one element of dtype (kernels that only move bits). */
template <typename Fn>
void by_element_size(DType dtype, Fn&& fn) {
  switch (dtype_size(dtype)) {
    case 1: fn(static_cast<uint8_t*>(nullptr)); return;
    case 2: fn(static_cast<uint16_t*>(nullptr)); return;
    case 4: fn(static_cast<uint32_t*>(nullptr)); return;
    default: fn(static_cast<unsigned long long*>(nullptr)); return;
  }
}

/** The grid-stride loop of a 1-D launch: for (i = first; i < n; i += step). */
#define DDP4J_GRID_LOOP(i, n)                                                                        \
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x,                      \
               i##_step_ = static_cast<int64_t>(gridDim.x) * blockDim.x;                             \
       i < (n); i += i##_step_)

}  // namespace ddp4j::cuda
