// CUDA reductions over whole tensors and rows: sum (accumulated in double, as the CPU kernel) and
// argmax_rows (first index of the maximum, as torch.argmax).
#include "cuda/cuda_context.h"
#include "cuda/kernels/reduce.cuh"
#include "ddp4j/dispatch.h"
#include "ddp4j/kernels.h"

namespace ddp4j::cuda {
namespace {

struct ReadFloat {
  const float* p;
  __device__ double operator()(int64_t i) const { return static_cast<double>(p[i]); }
};

/** out (shape []) = Σ a, in double: block partials, then one block adds them (deterministic). */
void sum(const Tensor& a, Tensor& out) {
  LaunchContext ctx(out);
  reduce_all(ReadFloat{a.numel() > 0 ? a.data<float>() : nullptr}, a.numel(), 1.0, out.data<float>(), ctx.device,
             ctx.stream, "sum");
}

constexpr int kArgmaxThreads = 256;
constexpr int kRowsPerBlock = kArgmaxThreads / 32;

/** Whether candidate (v, i) beats (best, best_i): NaN beats numbers (torch.argmax), then larger, then earlier. */
__device__ __forceinline__ bool beats(float v, int64_t i, float best, int64_t best_i) {
  const bool v_nan = isnan(v), best_nan = isnan(best);
  if (v_nan || best_nan) return v_nan && (!best_nan || i < best_i);
  return v > best || (v == best && i < best_i);
}

/**
 * One warp per row: each lane scans columns lane, lane + 32, ... keeping its best candidate, then
 * the lanes' candidates are merged with the same rule, so the result is the first index of the
 * maximum, or of the first NaN (as torch.argmax and the CPU kernel).
 */
__global__ void __launch_bounds__(kArgmaxThreads) argmax_rows_kernel(const float* x, int64_t rows, int64_t cols,
                                                                    int64_t* out) {
  const int lane = threadIdx.x % 32;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kRowsPerBlock;
  for (int64_t r = static_cast<int64_t>(blockIdx.x) * kRowsPerBlock + threadIdx.x / 32; r < rows; r += stride) {
    const float* row = x + r * cols;
    float best = -INFINITY;
    int64_t best_index = cols;  // "none yet": loses every tie against a real index
    for (int64_t c = lane; c < cols; c += 32) {
      const float v = row[c];
      if (best_index == cols || beats(v, c, best, best_index)) {
        best = v;
        best_index = c;
      }
    }
    for (int o = 16; o > 0; o >>= 1) {
      const float ov = __shfl_down_sync(0xffffffffu, best, o);
      const int64_t oi = __shfl_down_sync(0xffffffffu, best_index, o);
      if (oi != cols && (best_index == cols || beats(ov, oi, best, best_index))) {
        best = ov;
        best_index = oi;
      }
    }
    if (lane == 0) out[r] = best_index;
  }
}

/** out[n] (int64) = first index of the maximum of x[n, :]; x is [N, C] with C >= 1. */
void argmax_rows(const Tensor& x, Tensor& out) {
  const int64_t rows = x.size(0), cols = x.size(1);
  if (rows == 0) return;
  LaunchContext ctx(x);
  const unsigned blocks = grid_for(rows, kRowsPerBlock);
  argmax_rows_kernel<<<blocks, kArgmaxThreads, 0, ctx.stream>>>(x.data<float>(), rows, cols, out.data<int64_t>());
  DDP4J_CUDA_CHECK_LAUNCH("argmax_rows");
}

}  // namespace

DDP4J_REGISTER_KERNEL(sum, CUDA, sum);
DDP4J_REGISTER_KERNEL(argmax_rows, CUDA, argmax_rows);

}  // namespace ddp4j::cuda
