// CUDA kernels of the broadcast family: binary element-wise ops and comparisons, where and
// masked_fill, each operand read through broadcast strides (0 along a stretched dimension). One
// thread per output element (grid-stride), the same float32 expressions as src/cpu/broadcast.cpp,
// so results are bit-equal to the CPU's (division is IEEE: the library is built without fast math).
#include "cuda/cuda_context.h"
#include "cuda/kernels/indexing.cuh"
#include "ddp4j/broadcast.h"
#include "ddp4j/dispatch.h"
#include "ddp4j/kernels.h"

namespace ddp4j::cuda {
namespace {

using kernels::BinaryOp;

constexpr int kThreads = 256;

template <typename T>
__device__ __forceinline__ uint8_t compare_values(BinaryOp op, T x, T y) {
  switch (op) {
    case BinaryOp::Eq: return x == y;
    case BinaryOp::Ne: return x != y;
    case BinaryOp::Lt: return x < y;
    case BinaryOp::Gt: return x > y;
    case BinaryOp::Le: return x <= y;
    default: return x >= y;
  }
}

__device__ __forceinline__ float arithmetic(BinaryOp op, float x, float y) {
  switch (op) {
    case BinaryOp::Add: return x + y;
    case BinaryOp::Sub: return x - y;
    case BinaryOp::Mul: return x * y;
    default: return x / y;
  }
}

__global__ void arithmetic_kernel(const float* a, const float* b, BinaryOp op, float* out, int64_t n,
                                  StridedWalk<2> walk) {
  DDP4J_GRID_LOOP(i, n) {
    int64_t off[2];
    walk.offsets(i, off);
    out[i] = arithmetic(op, a[off[0]], b[off[1]]);
  }
}

template <typename T>
__global__ void compare_kernel(const T* a, const T* b, BinaryOp op, uint8_t* out, int64_t n, StridedWalk<2> walk) {
  DDP4J_GRID_LOOP(i, n) {
    int64_t off[2];
    walk.offsets(i, off);
    out[i] = compare_values<T>(op, a[off[0]], b[off[1]]);
  }
}

template <typename T>
__global__ void where_kernel(const uint8_t* c, const T* a, const T* b, T* out, int64_t n, StridedWalk<3> walk) {
  DDP4J_GRID_LOOP(i, n) {
    int64_t off[3];
    walk.offsets(i, off);
    out[i] = c[off[0]] ? a[off[1]] : b[off[2]];
  }
}

template <typename T>
__global__ void masked_fill_kernel(const T* x, const uint8_t* mask, T value, T* out, int64_t n, StridedWalk<2> walk) {
  DDP4J_GRID_LOOP(i, n) {
    int64_t off[2];
    walk.offsets(i, off);
    out[i] = mask[off[1]] ? value : x[off[0]];
  }
}

/** The walk of out with each operand's broadcast strides. */
template <int N>
StridedWalk<N> walk_for(const char* op, const Tensor& out, const std::array<const Tensor*, N>& operands) {
  std::array<std::vector<int64_t>, N> strides;
  for (int k = 0; k < N; ++k) strides[k] = broadcast_strides(operands[k]->shape(), out.shape());
  return make_walk<N>(op, out.shape(), strides);
}

void broadcast_binary(const Tensor& a, const Tensor& b, BinaryOp op, Tensor& out) {
  const int64_t n = out.numel();
  if (n == 0) return;
  const StridedWalk<2> walk = walk_for<2>("broadcast_binary", out, {&a, &b});
  LaunchContext ctx(out);
  const unsigned grid = grid_for(n, kThreads);
  if (op <= BinaryOp::Div) {
    arithmetic_kernel<<<grid, kThreads, 0, ctx.stream>>>(a.data<float>(), b.data<float>(), op, out.data<float>(), n,
                                                          walk);
  } else if (a.dtype() == DType::Int64) {
    compare_kernel<int64_t><<<grid, kThreads, 0, ctx.stream>>>(a.data<int64_t>(), b.data<int64_t>(), op,
                                                               out.data<uint8_t>(), n, walk);
  } else if (a.dtype() == DType::Bool) {
    compare_kernel<uint8_t><<<grid, kThreads, 0, ctx.stream>>>(a.data<uint8_t>(), b.data<uint8_t>(), op,
                                                               out.data<uint8_t>(), n, walk);
  } else {
    compare_kernel<float><<<grid, kThreads, 0, ctx.stream>>>(a.data<float>(), b.data<float>(), op,
                                                             out.data<uint8_t>(), n, walk);
  }
  DDP4J_CUDA_CHECK_LAUNCH("broadcast_binary");
}

void where(const Tensor& condition, const Tensor& a, const Tensor& b, Tensor& out) {
  const int64_t n = out.numel();
  if (n == 0) return;
  const StridedWalk<3> walk = walk_for<3>("where", out, {&condition, &a, &b});
  LaunchContext ctx(out);
  by_element_size(out.dtype(), [&](auto* type) {
    using T = std::remove_pointer_t<decltype(type)>;
    where_kernel<T><<<grid_for(n, kThreads), kThreads, 0, ctx.stream>>>(
        condition.data<uint8_t>(), static_cast<const T*>(a.raw_data()), static_cast<const T*>(b.raw_data()),
        static_cast<T*>(out.raw_data()), n, walk);
  });
  DDP4J_CUDA_CHECK_LAUNCH("where");
}

template <typename T>
void launch_masked_fill(const Tensor& x, const Tensor& mask, T value, Tensor& out, const StridedWalk<2>& walk,
                        cudaStream_t stream) {
  const int64_t n = out.numel();
  masked_fill_kernel<T><<<grid_for(n, kThreads), kThreads, 0, stream>>>(
      static_cast<const T*>(x.raw_data()), mask.data<uint8_t>(), value, static_cast<T*>(out.raw_data()), n, walk);
}

void masked_fill(const Tensor& x, const Tensor& mask, double value, Tensor& out) {
  if (out.numel() == 0) return;
  const StridedWalk<2> walk = walk_for<2>("masked_fill", out, {&x, &mask});
  LaunchContext ctx(out);
  switch (x.dtype()) {
    case DType::Int64: launch_masked_fill<int64_t>(x, mask, static_cast<int64_t>(value), out, walk, ctx.stream); break;
    case DType::Bool: launch_masked_fill<uint8_t>(x, mask, value != 0 ? 1 : 0, out, walk, ctx.stream); break;
    default: launch_masked_fill<float>(x, mask, static_cast<float>(value), out, walk, ctx.stream); break;
  }
  DDP4J_CUDA_CHECK_LAUNCH("masked_fill");
}

}  // namespace

DDP4J_REGISTER_KERNEL(broadcast_binary, CUDA, broadcast_binary);
DDP4J_REGISTER_KERNEL(where, CUDA, where);
DDP4J_REGISTER_KERNEL(masked_fill, CUDA, masked_fill);

}  // namespace ddp4j::cuda
