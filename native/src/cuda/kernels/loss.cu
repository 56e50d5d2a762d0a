// CUDA losses (mean reduction), as src/cpu/loss.cpp: sums in double, cross entropy as a fused
// max-subtracted softmax (one warp per row) whose per-row losses are added deterministically.
//
// Class indices live on the GPU, so a target outside [0, C) cannot throw here: the kernel clamps
// it for the read (no out-of-bounds access) and records the first bad value in the device's
// deferred-error word (which holds kNoDeferredError, INT64_MIN, until then); cuda::check_deferred_errors turns it into an InvalidArgument at
// the next synchronisation (or device-to-host copy).
#include "cuda/cuda_context.h"
#include "cuda/kernels/reduce.cuh"
#include "ddp4j/dispatch.h"
#include "ddp4j/kernels.h"

namespace ddp4j::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kRowsPerBlock = kThreads / 32;

/** Records a bad class index: the first one to arrive wins (the word holds kNoDeferredError until then). */
__device__ __forceinline__ void record_bad_target(int64_t* error_word, int64_t t) {
  auto* word = reinterpret_cast<unsigned long long*>(error_word);
  atomicCAS(word, static_cast<unsigned long long>(kNoDeferredError), static_cast<unsigned long long>(t));
}

struct SquaredDiff {
  const float* input;
  const float* target;
  __device__ double operator()(int64_t i) const {
    const double d = static_cast<double>(input[i]) - target[i];
    return d * d;
  }
};

struct ReadDouble {
  const double* p;
  __device__ double operator()(int64_t i) const { return p[i]; }
};

__global__ void mse_backward_kernel(const float* gout, const float* input, const float* target, int64_t n,
                                    float* ginput) {
  const float s = static_cast<float>(2.0 * static_cast<double>(gout[0]) / static_cast<double>(n));
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    ginput[i] = s * (input[i] - target[i]);
  }
}

/**
 * One warp per row of logits[rows, C]: row max, e = exp(x - max) with the sum in double,
 * probs = e * float(1 / sum), and row_loss[r] = log(sum) - (x[t] - max) in double.
 */
__global__ void __launch_bounds__(kThreads) cross_entropy_rows(const float* logits, const int64_t* target,
                                                               int64_t rows, int64_t C, float* probs,
                                                               double* row_loss, int64_t* error_word) {
  const int lane = threadIdx.x % 32;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kRowsPerBlock;
  for (int64_t r = static_cast<int64_t>(blockIdx.x) * kRowsPerBlock + threadIdx.x / 32; r < rows; r += stride) {
    const float* x = logits + r * C;
    float* p = probs + r * C;
    float m = -INFINITY;
    for (int64_t c = lane; c < C; c += 32) m = fmaxf(m, x[c]);
    for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
    double sum = 0.0;
    for (int64_t c = lane; c < C; c += 32) {
      const float e = expf(x[c] - m);  // <= 1: nothing overflows; the sum is >= 1
      p[c] = e;
      sum += e;
    }
    for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
    const float inv = static_cast<float>(1.0 / sum);
    for (int64_t c = lane; c < C; c += 32) p[c] *= inv;  // each lane rescales what it wrote
    if (lane == 0) {
      int64_t t = target[r];
      if (t < 0 || t >= C) {
        record_bad_target(error_word, t);
        t = t < 0 ? 0 : C - 1;
      }
      row_loss[r] = log(sum) - (static_cast<double>(x[t]) - m);
    }
  }
}

__global__ void cross_entropy_backward_kernel(const float* gout, const float* probs, const int64_t* target,
                                              int64_t rows, int64_t C, float* glogits, int64_t* error_word) {
  const float s = static_cast<float>(static_cast<double>(gout[0]) / static_cast<double>(rows));
  const int64_t n = rows * C;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const int64_t r = i / C, c = i - r * C;
    const int64_t t = target[r];
    if (c == 0 && (t < 0 || t >= C)) record_bad_target(error_word, t);  // no one-hot for it
    glogits[i] = c == t ? s * (probs[i] - 1.0f) : s * probs[i];
  }
}

/** out (shape []) = mean((input - target)²), in double (NaN for empty inputs, as PyTorch). */
void mse_loss_forward(const Tensor& input, const Tensor& target, Tensor& out) {
  LaunchContext ctx(out);
  const int64_t n = input.numel();
  reduce_all(SquaredDiff{n > 0 ? input.data<float>() : nullptr, n > 0 ? target.data<float>() : nullptr}, n,
             static_cast<double>(n), out.data<float>(), ctx.device, ctx.stream, "mse_loss");
}

/** ginput = gout * 2 (input - target) / numel, gout a device scalar. */
void mse_loss_backward(const Tensor& gout, const Tensor& input, const Tensor& target, Tensor& ginput) {
  const int64_t n = input.numel();
  if (n == 0) return;
  LaunchContext ctx(ginput);
  mse_backward_kernel<<<grid_for(n, kThreads), kThreads, 0, ctx.stream>>>(
      gout.data<float>(), input.data<float>(), target.data<float>(), n, ginput.data<float>());
  DDP4J_CUDA_CHECK_LAUNCH("mse_loss_backward");
}

/**
 * out (shape []) = mean over rows of -log_softmax(logits)[target]; probs [rows, C] = softmax.
 * A target outside [0, C) is reported at the next synchronisation (see the top of this file).
 */
void cross_entropy_forward(const Tensor& logits, const Tensor& target, Tensor& out, Tensor& probs) {
  const int64_t rows = logits.size(0), C = logits.size(1);
  LaunchContext ctx(out);
  Tensor row_loss = double_scratch(rows, ctx.device);
  double* pl = reinterpret_cast<double*>(row_loss.raw_data());
  if (rows > 0) {
    cross_entropy_rows<<<grid_for(rows, kRowsPerBlock), kThreads, 0, ctx.stream>>>(
        logits.data<float>(), target.data<int64_t>(), rows, C, probs.data<float>(), pl,
        deferred_error_word(ctx.device));
    DDP4J_CUDA_CHECK_LAUNCH("cross_entropy");
  }
  // rows == 0 gives 0 / 0 = NaN, as the CPU kernel (and PyTorch's mean over nothing).
  reduce_all(ReadDouble{pl}, rows, static_cast<double>(rows), out.data<float>(), ctx.device, ctx.stream,
             "cross_entropy");
}

/** glogits = gout * (probs - onehot(target)) / rows. */
void cross_entropy_backward(const Tensor& gout, const Tensor& probs, const Tensor& target, Tensor& glogits) {
  const int64_t rows = probs.size(0), C = probs.size(1);
  if (rows * C == 0) return;
  LaunchContext ctx(glogits);
  cross_entropy_backward_kernel<<<grid_for(rows * C, kThreads), kThreads, 0, ctx.stream>>>(
      gout.data<float>(), probs.data<float>(), target.data<int64_t>(), rows, C, glogits.data<float>(),
      deferred_error_word(ctx.device));
  DDP4J_CUDA_CHECK_LAUNCH("cross_entropy_backward");
}

}  // namespace

DDP4J_REGISTER_KERNEL(mse_loss_forward, CUDA, mse_loss_forward);
DDP4J_REGISTER_KERNEL(mse_loss_backward, CUDA, mse_loss_backward);
DDP4J_REGISTER_KERNEL(cross_entropy_forward, CUDA, cross_entropy_forward);
DDP4J_REGISTER_KERNEL(cross_entropy_backward, CUDA, cross_entropy_backward);

}  // namespace ddp4j::cuda
