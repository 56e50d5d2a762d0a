// CUDA torch.optim.Adam / AdamW update, in place, one thread per element (grid-stride): the same
// float32 steps and float coefficients as src/cpu/adam.cpp, so results match PyTorch to rounding.
#include <cmath>

#include "cuda/cuda_context.h"
#include "ddp4j/dispatch.h"
#include "ddp4j/kernels.h"

namespace ddp4j::cuda {
namespace {

constexpr int kThreads = 256;

struct AdamCoefficients {
  float decay, wd, b1, one_minus_b1, b2, one_minus_b2, bc2_sqrt, neg_step_size, eps;
  bool decoupled;
};

__global__ void adam_kernel(float* p, const float* g, float* m, float* v, float* vmax, int64_t n,
                            AdamCoefficients k) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    float pi = p[i];
    if (k.decoupled) pi *= k.decay;
    const float d = k.wd != 0.0f ? g[i] + k.wd * pi : g[i];
    const float mi = m[i] * k.b1 + k.one_minus_b1 * d;
    const float vi = v[i] * k.b2 + k.one_minus_b2 * d * d;
    m[i] = mi;
    v[i] = vi;
    float second = vi;
    if (vmax != nullptr) {
      second = fmaxf(vmax[i], vi);
      vmax[i] = second;
    }
    const float denom = sqrtf(second) / k.bc2_sqrt + k.eps;
    p[i] = pi + k.neg_step_size * mi / denom;
  }
}

/** One Adam / AdamW step on param (in place); max_exp_avg_sq is read and written with amsgrad. */
void adam_step(Tensor& param, const Tensor& grad, Tensor& exp_avg, Tensor& exp_avg_sq, Tensor& max_exp_avg_sq,
               const kernels::AdamOptions& o, int64_t step) {
  const int64_t n = param.numel();
  if (n == 0) return;
  LaunchContext ctx(param);
  const double s = static_cast<double>(step);
  const AdamCoefficients k{static_cast<float>(1.0 - o.lr * o.weight_decay),
                           o.decoupled ? 0.0f : static_cast<float>(o.weight_decay),
                           static_cast<float>(o.beta1),
                           static_cast<float>(1.0 - o.beta1),
                           static_cast<float>(o.beta2),
                           static_cast<float>(1.0 - o.beta2),
                           static_cast<float>(std::sqrt(1.0 - std::pow(o.beta2, s))),
                           static_cast<float>(-(o.lr / (1.0 - std::pow(o.beta1, s)))),
                           static_cast<float>(o.eps),
                           o.decoupled};
  adam_kernel<<<grid_for(n, kThreads), kThreads, 0, ctx.stream>>>(
      param.data<float>(), grad.data<float>(), exp_avg.data<float>(), exp_avg_sq.data<float>(),
      o.amsgrad ? max_exp_avg_sq.data<float>() : nullptr, n, k);
  DDP4J_CUDA_CHECK_LAUNCH("adam_step");
}

}  // namespace

DDP4J_REGISTER_KERNEL(adam_step, CUDA, adam_step);

}  // namespace ddp4j::cuda
