// CUDA kernels of the reduce family: sums over the trailing axis of a [rows, cols] view, max along
// a dimension, softmax and log_softmax and their backwards (src/cpu/reduce.cpp's contract and
// float32 / double math). Lines along the last dimension (inner == 1) are reduced by one warp each
// (lanes stride over the line, then a shuffle tree: a fixed order, deterministic, but not the
// CPU's left-to-right order, so sums may differ in the last bits); strided lines (inner > 1) by
// one thread each in index order, consecutive threads on consecutive columns (coalesced).
#include "cuda/cuda_context.h"
#include "cuda/kernels/indexing.cuh"
#include "cuda/kernels/reduce.cuh"
#include "ddp4j/dispatch.h"
#include "ddp4j/kernels.h"

namespace ddp4j::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kWarpsPerBlock = kThreads / 32;

/** The line each warp of the block works on first, and the step to its next one. */
#define DDP4J_WARP_LINES(line, count)                                                                   \
  for (int64_t line = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32,           \
               line##_step_ = static_cast<int64_t>(gridDim.x) * kWarpsPerBlock;                       \
       line < (count); line += line##_step_)

__device__ __forceinline__ float warp_max(float v) {
  // (a < b) ? b : a, as std::max: NaN never enters (the partial maxima start at -inf and skip NaN).
  for (int o = 16; o > 0; o >>= 1) {
    const float other = __shfl_xor_sync(0xffffffffu, v, o);
    v = v < other ? other : v;
  }
  return v;
}

__device__ __forceinline__ double warp_all_sum(double v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// ---- sum_rows -------------------------------------------------------------------------------------

__global__ void sum_rows_warp_kernel(const float* x, int64_t rows, int64_t cols, double scale, float* out) {
  const int lane = threadIdx.x % 32;
  DDP4J_WARP_LINES(r, rows) {
    const float* row = x + r * cols;
    double s = 0.0;
    for (int64_t c = lane; c < cols; c += 32) s += static_cast<double>(row[c]);
    s = warp_all_sum(s);
    if (lane == 0) out[r] = static_cast<float>(s * scale);
  }
}

struct ReadRowValue {
  const float* p;
  __device__ double operator()(int64_t i) const { return static_cast<double>(p[i]); }
};

void sum_rows(const Tensor& x, int64_t rows, int64_t cols, double scale, Tensor& out) {
  if (rows == 0) return;
  LaunchContext ctx(out);
  if (rows == 1 && cols > 32 * 1024) {
    // One long row (a sum over everything): the whole GPU adds it, two passes (reduce.cuh).
    reduce_all(ReadRowValue{x.data<float>()}, cols, 1.0 / scale, out.data<float>(), ctx.device, ctx.stream, "sum_rows");
    return;
  }
  sum_rows_warp_kernel<<<grid_for(rows, kWarpsPerBlock), kThreads, 0, ctx.stream>>>(
      cols > 0 ? x.data<float>() : nullptr, rows, cols, scale, out.data<float>());
  DDP4J_CUDA_CHECK_LAUNCH("sum_rows");
}

// ---- max_dim --------------------------------------------------------------------------------------

/** Whether (v, i) beats (best, best_i): NaN beats numbers (the first NaN wins), then larger, then earlier. */
__device__ __forceinline__ bool beats(float v, int64_t i, float best, int64_t best_i) {
  const bool v_nan = isnan(v), best_nan = isnan(best);
  if (v_nan || best_nan) return v_nan && (!best_nan || i < best_i);
  return v > best || (v == best && i < best_i);
}

/** Strided lines: one thread scans its line in order, as the CPU kernel. */
__global__ void max_dim_line_kernel(const float* x, int64_t outer, int64_t size, int64_t inner, float* values,
                                    int64_t* indices) {
  DDP4J_GRID_LOOP(l, outer * inner) {
    const float* line = x + (l / inner) * size * inner + l % inner;
    int64_t best = 0;
    for (int64_t j = 1; j < size && !isnan(line[best * inner]); ++j) {
      const float v = line[j * inner];
      if (isnan(v) || v > line[best * inner]) best = j;
    }
    values[l] = line[best * inner];
    indices[l] = best;
  }
}

/** Contiguous lines: a warp each, the lanes' candidates merged with `beats` (order-independent). */
__global__ void max_dim_warp_kernel(const float* x, int64_t lines, int64_t size, float* values, int64_t* indices) {
  const int lane = threadIdx.x % 32;
  DDP4J_WARP_LINES(l, lines) {
    const float* line = x + l * size;
    float best = -INFINITY;
    int64_t best_i = size;  // none yet
    for (int64_t j = lane; j < size; j += 32) {
      const float v = line[j];
      if (best_i == size || beats(v, j, best, best_i)) {
        best = v;
        best_i = j;
      }
    }
    for (int o = 16; o > 0; o >>= 1) {
      const float ov = __shfl_xor_sync(0xffffffffu, best, o);
      const int64_t oi = __shfl_xor_sync(0xffffffffu, best_i, o);
      if (oi != size && (best_i == size || beats(ov, oi, best, best_i))) {
        best = ov;
        best_i = oi;
      }
    }
    if (lane == 0) {
      values[l] = best;
      indices[l] = best_i;
    }
  }
}

void max_dim(const Tensor& x, int64_t outer, int64_t size, int64_t inner, Tensor& values, Tensor& indices) {
  const int64_t lines = outer * inner;
  if (lines == 0) return;
  LaunchContext ctx(values);
  if (inner == 1) {
    max_dim_warp_kernel<<<grid_for(lines, kWarpsPerBlock), kThreads, 0, ctx.stream>>>(
        x.data<float>(), lines, size, values.data<float>(), indices.data<int64_t>());
  } else {
    max_dim_line_kernel<<<grid_for(lines, kThreads), kThreads, 0, ctx.stream>>>(
        x.data<float>(), outer, size, inner, values.data<float>(), indices.data<int64_t>());
  }
  DDP4J_CUDA_CHECK_LAUNCH("max_dim");
}

// ---- softmax --------------------------------------------------------------------------------------

/** The CPU's rule: a line of -inf (fully masked) is shifted by 0, giving NaN as PyTorch. */
__device__ __forceinline__ float usable_max(float m) { return isinf(m) && m < 0 ? 0.0f : m; }

/** Writes softmax or log_softmax of one line given its max and Σ exp(x - max) (in double), as the CPU. */
__device__ __forceinline__ float softmax_value(float v, float max, double sum, bool log) {
  if (log) return v - (max + static_cast<float>(::log(sum)));
  return static_cast<float>(::exp(static_cast<double>(v - max)) * (1.0 / sum));
}

__global__ void softmax_warp_kernel(const float* x, int64_t lines, int64_t size, bool log, float* y) {
  const int lane = threadIdx.x % 32;
  DDP4J_WARP_LINES(l, lines) {
    const float* in = x + l * size;
    float* out = y + l * size;
    float max = -INFINITY;
    for (int64_t j = lane; j < size; j += 32) max = max < in[j] ? in[j] : max;
    max = usable_max(warp_max(max));
    double sum = 0.0;
    for (int64_t j = lane; j < size; j += 32) sum += ::exp(static_cast<double>(in[j] - max));
    sum = warp_all_sum(sum);
    for (int64_t j = lane; j < size; j += 32) out[j] = softmax_value(in[j], max, sum, log);
  }
}

__global__ void softmax_line_kernel(const float* x, int64_t outer, int64_t size, int64_t inner, bool log, float* y) {
  DDP4J_GRID_LOOP(l, outer * inner) {
    const int64_t base = (l / inner) * size * inner + l % inner;
    const float* in = x + base;
    float* out = y + base;
    float max = -INFINITY;
    for (int64_t j = 0; j < size; ++j) max = max < in[j * inner] ? in[j * inner] : max;
    max = usable_max(max);
    double sum = 0.0;
    for (int64_t j = 0; j < size; ++j) sum += ::exp(static_cast<double>(in[j * inner] - max));
    for (int64_t j = 0; j < size; ++j) out[j * inner] = softmax_value(in[j * inner], max, sum, log);
  }
}

void softmax(const Tensor& x, int64_t outer, int64_t size, int64_t inner, bool log, Tensor& y) {
  const int64_t lines = outer * inner;
  if (lines == 0 || size == 0) return;
  LaunchContext ctx(y);
  if (inner == 1) {
    softmax_warp_kernel<<<grid_for(lines, kWarpsPerBlock), kThreads, 0, ctx.stream>>>(x.data<float>(), lines, size,
                                                                                      log, y.data<float>());
  } else {
    softmax_line_kernel<<<grid_for(lines, kThreads), kThreads, 0, ctx.stream>>>(x.data<float>(), outer, size, inner,
                                                                                log, y.data<float>());
  }
  DDP4J_CUDA_CHECK_LAUNCH("softmax");
}

/** gx = y (gy - Σ gy y) for softmax, gy - exp(y) Σ gy for log_softmax, given the line's sum (as the CPU). */
__device__ __forceinline__ float softmax_grad(float g, float out, float s, bool log) {
  return log ? g - expf(out) * s : out * (g - s);
}

__device__ __forceinline__ double softmax_grad_term(float g, float out, bool log) {
  return log ? static_cast<double>(g) : static_cast<double>(g) * out;
}

__global__ void softmax_backward_warp_kernel(const float* gy, const float* y, int64_t lines, int64_t size, bool log,
                                             float* gx) {
  const int lane = threadIdx.x % 32;
  DDP4J_WARP_LINES(l, lines) {
    const float* g = gy + l * size;
    const float* out = y + l * size;
    float* dx = gx + l * size;
    double s = 0.0;
    for (int64_t j = lane; j < size; j += 32) s += softmax_grad_term(g[j], out[j], log);
    const float sf = static_cast<float>(warp_all_sum(s));
    for (int64_t j = lane; j < size; j += 32) dx[j] = softmax_grad(g[j], out[j], sf, log);
  }
}

__global__ void softmax_backward_line_kernel(const float* gy, const float* y, int64_t outer, int64_t size,
                                             int64_t inner, bool log, float* gx) {
  DDP4J_GRID_LOOP(l, outer * inner) {
    const int64_t base = (l / inner) * size * inner + l % inner;
    const float* g = gy + base;
    const float* out = y + base;
    float* dx = gx + base;
    double s = 0.0;
    for (int64_t j = 0; j < size; ++j) s += softmax_grad_term(g[j * inner], out[j * inner], log);
    const float sf = static_cast<float>(s);
    for (int64_t j = 0; j < size; ++j) dx[j * inner] = softmax_grad(g[j * inner], out[j * inner], sf, log);
  }
}

void softmax_backward(const Tensor& gy, const Tensor& y, int64_t outer, int64_t size, int64_t inner, bool log,
                      Tensor& gx) {
  const int64_t lines = outer * inner;
  if (lines == 0 || size == 0) return;
  LaunchContext ctx(gx);
  if (inner == 1) {
    softmax_backward_warp_kernel<<<grid_for(lines, kWarpsPerBlock), kThreads, 0, ctx.stream>>>(
        gy.data<float>(), y.data<float>(), lines, size, log, gx.data<float>());
  } else {
    softmax_backward_line_kernel<<<grid_for(lines, kThreads), kThreads, 0, ctx.stream>>>(
        gy.data<float>(), y.data<float>(), outer, size, inner, log, gx.data<float>());
  }
  DDP4J_CUDA_CHECK_LAUNCH("softmax_backward");
}

}  // namespace

DDP4J_REGISTER_KERNEL(sum_rows, CUDA, sum_rows);
DDP4J_REGISTER_KERNEL(max_dim, CUDA, max_dim);
DDP4J_REGISTER_KERNEL(softmax, CUDA, softmax);
DDP4J_REGISTER_KERNEL(softmax_backward, CUDA, softmax_backward);

}  // namespace ddp4j::cuda
