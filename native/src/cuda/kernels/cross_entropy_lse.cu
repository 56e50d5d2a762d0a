// CUDA cross entropy for large vocabularies with ignore_index, as src/cpu/cross_entropy_lse.cpp:
// the forward gives one block per row (row max, Σ exp(x - max) in double, logsumexp saved, the
// row's loss in double), then one block adds the row losses and counts the kept rows in a fixed
// order; the backward recomputes softmax = exp(x - lse) straight into the gradient.
//
// Targets live on the GPU, so one outside [0, C) that is not ignore_index cannot throw here: it is
// clamped for the read and recorded in the device's deferred-error word, which
// cuda::check_deferred_errors turns into an InvalidArgument at the next synchronisation.
#include "cuda/cuda_context.h"
#include "cuda/kernels/reduce.cuh"
#include "cuda/kernels/row_reduce.cuh"
#include "ddp4j/dispatch.h"
#include "ddp4j/transformer_kernels.h"

namespace ddp4j::cuda {
namespace {

constexpr int kThreads = 256;

__device__ __forceinline__ void record_bad_target(int64_t* error_word, int64_t t) {
  atomicCAS(reinterpret_cast<unsigned long long*>(error_word), static_cast<unsigned long long>(kNoDeferredError),
            static_cast<unsigned long long>(t));
}

/** The target of row r clamped into [0, C) (recording a bad one unless error_word is null), or -1 when ignored. */
__device__ __forceinline__ int64_t kept_target(const int64_t* target, int64_t r, int64_t C, int64_t ignore_index,
                                               int64_t* error_word) {
  const int64_t t = target[r];
  if (t == ignore_index) return -1;
  if (t < 0 || t >= C) {
    if (error_word != nullptr) record_bad_target(error_word, t);
    return t < 0 ? 0 : C - 1;
  }
  return t;
}

/** Block r: lse[r] and row_loss[r] = log Σ exp(x - m) - (x[t] - m) (0 for an ignored row). */
__global__ void __launch_bounds__(kRowThreads) lse_rows(const float* logits, const int64_t* target, int64_t C,
                                                        int64_t ignore_index, float* lse, double* row_loss,
                                                        int64_t* error_word) {
  const int64_t r = blockIdx.x;
  const float* x = logits + r * C;
  float m = -INFINITY;
  for (int64_t c = threadIdx.x; c < C; c += kRowThreads) m = fmaxf(m, x[c]);
  m = row_block_max(m);
  double sum = 0;  // exp(x - m) <= 1: nothing overflows, and the sum is >= 1
  for (int64_t c = threadIdx.x; c < C; c += kRowThreads) sum += expf(x[c] - m);
  const double log_sum = log(row_block_sum(sum));
  if (threadIdx.x == 0) {
    lse[r] = static_cast<float>(m + log_sum);
    const int64_t t = kept_target(target, r, C, ignore_index, error_word);
    // In double, so that huge logits cancel exactly.
    row_loss[r] = t < 0 ? 0.0 : log_sum - (static_cast<double>(x[t]) - m);
  }
}

/** One block: out = Σ row_loss / (rows kept), NaN when every row is ignored (0 / 0, as PyTorch's mean). */
__global__ void __launch_bounds__(kRowThreads) lse_loss_finish(const double* row_loss, const int64_t* target,
                                                               int64_t rows, int64_t ignore_index, float* out) {
  double s = 0, kept = 0;
  for (int64_t r = threadIdx.x; r < rows; r += kRowThreads) {
    s += row_loss[r];
    kept += target[r] != ignore_index ? 1.0 : 0.0;
  }
  s = row_block_sum(s);
  kept = row_block_sum(kept);
  if (threadIdx.x == 0) out[0] = kept == 0 ? NAN : static_cast<float>(s / kept);
}

/** One block: *scale = float(gout / kept rows), 0 when every row is ignored. */
__global__ void __launch_bounds__(kRowThreads) lse_backward_scale(const float* gout, const int64_t* target,
                                                                  int64_t rows, int64_t ignore_index, float* scale) {
  double kept = 0;
  for (int64_t r = threadIdx.x; r < rows; r += kRowThreads) kept += target[r] != ignore_index ? 1.0 : 0.0;
  kept = row_block_sum(kept);
  if (threadIdx.x == 0) scale[0] = kept == 0 ? 0.0f : static_cast<float>(static_cast<double>(gout[0]) / kept);
}

/** Block (row r, column part): g = s * exp(x - lse) - s * onehot(t); an ignored row gets 0. */
__global__ void __launch_bounds__(kThreads) lse_backward_rows(const float* logits, const float* lse,
                                                              const int64_t* target, int64_t C, int64_t ignore_index,
                                                              const float* scale, float* glogits,
                                                              int64_t* error_word) {
  const int64_t r = blockIdx.x;
  const int64_t c = static_cast<int64_t>(blockIdx.y) * kThreads + threadIdx.x;
  if (c >= C) return;
  const int64_t t = kept_target(target, r, C, ignore_index, c == 0 ? error_word : nullptr);
  float* g = glogits + r * C;
  if (t < 0) {
    g[c] = 0.0f;
    return;
  }
  const float s = scale[0];
  const float p = expf(logits[r * C + c] - lse[r]);
  g[c] = c == t ? s * (p - 1.0f) : s * p;
}

void cross_entropy_lse_forward(const Tensor& logits, const Tensor& target, int64_t ignore_index, Tensor& out,
                               Tensor& lse) {
  const int64_t rows = logits.size(0), C = logits.size(1);
  DDP4J_CHECK_ARG(rows <= 0x7fffffff, "cross_entropy: ", rows, " rows are too many for one grid");
  LaunchContext ctx(out);
  Tensor row_loss = double_scratch(rows, ctx.device);
  double* pl = reinterpret_cast<double*>(row_loss.raw_data());
  if (rows > 0) {
    lse_rows<<<static_cast<unsigned>(rows), kRowThreads, 0, ctx.stream>>>(
        logits.data<float>(), target.data<int64_t>(), C, ignore_index, lse.data<float>(), pl,
        deferred_error_word(ctx.device));
    DDP4J_CUDA_CHECK_LAUNCH("cross_entropy");
  }
  lse_loss_finish<<<1, kRowThreads, 0, ctx.stream>>>(pl, rows > 0 ? target.data<int64_t>() : nullptr, rows,
                                                     ignore_index, out.data<float>());
  DDP4J_CUDA_CHECK_LAUNCH("cross_entropy (mean)");
}

void cross_entropy_lse_backward(const Tensor& gout, const Tensor& logits, const Tensor& lse, const Tensor& target,
                                int64_t ignore_index, Tensor& glogits) {
  const int64_t rows = logits.size(0), C = logits.size(1);
  if (rows * C == 0) return;
  const int64_t parts = (C + kThreads - 1) / kThreads;
  DDP4J_CHECK_ARG(rows <= 0x7fffffff && parts <= 65535, "cross_entropy_backward: input ", rows, " x ", C,
                  " is too large for one grid");
  LaunchContext ctx(glogits);
  Tensor scale = Tensor::empty({1}, DType::Float32, glogits.device());
  lse_backward_scale<<<1, kRowThreads, 0, ctx.stream>>>(gout.data<float>(), target.data<int64_t>(), rows,
                                                        ignore_index, scale.data<float>());
  DDP4J_CUDA_CHECK_LAUNCH("cross_entropy_backward (scale)");
  lse_backward_rows<<<dim3(static_cast<unsigned>(rows), static_cast<unsigned>(parts)), kThreads, 0, ctx.stream>>>(
      logits.data<float>(), lse.data<float>(), target.data<int64_t>(), C, ignore_index, scale.data<float>(),
      glogits.data<float>(), deferred_error_word(ctx.device));
  DDP4J_CUDA_CHECK_LAUNCH("cross_entropy_backward");
}

}  // namespace

DDP4J_REGISTER_KERNEL(cross_entropy_lse_forward, CUDA, cross_entropy_lse_forward);
DDP4J_REGISTER_KERNEL(cross_entropy_lse_backward, CUDA, cross_entropy_lse_backward);

}  // namespace ddp4j::cuda
