// CPU kernel for one torch.optim.Adam / AdamW update, in place. Follows PyTorch 1.13's
// _single_tensor_adam(w) op by op in float32 with float coefficients (bias corrections in double,
// as Python computes them), so results match PyTorch to rounding. Element ranges are split among
// the intra-op threads (each element's update is independent of the others).
#include <algorithm>
#include <cmath>

#include "ddp4j/dispatch.h"
#include "ddp4j/kernels.h"
#include "ddp4j/parallel.h"

namespace ddp4j::cpu {
namespace {

void adam_step(Tensor& param, Tensor const& grad, Tensor& exp_avg, Tensor& exp_avg_sq, Tensor& max_exp_avg_sq,
               const kernels::AdamOptions& o, int64_t step) {
  float* p = param.data<float>();
  const float* g = grad.data<float>();
  float* m = exp_avg.data<float>();
  float* v = exp_avg_sq.data<float>();
  float* vmax = o.amsgrad ? max_exp_avg_sq.data<float>() : nullptr;
  const int64_t n = param.numel();
  const double s = static_cast<double>(step);
  const float decay = o.decoupled ? static_cast<float>(1.0 - o.lr * o.weight_decay) : 1.0f;
  const float wd = o.decoupled ? 0.0f : static_cast<float>(o.weight_decay);
  const float b1 = static_cast<float>(o.beta1), one_minus_b1 = static_cast<float>(1.0 - o.beta1);
  const float b2 = static_cast<float>(o.beta2), one_minus_b2 = static_cast<float>(1.0 - o.beta2);
  const float bc2_sqrt = static_cast<float>(std::sqrt(1.0 - std::pow(o.beta2, s)));
  const float neg_step_size = static_cast<float>(-(o.lr / (1.0 - std::pow(o.beta1, s))));
  const float eps = static_cast<float>(o.eps);
  const bool decoupled = o.decoupled;
  parallel_for(0, n, kGrainSize / 4, [=](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) {
      if (decoupled) p[i] *= decay;
      const float d = wd != 0.0f ? g[i] + wd * p[i] : g[i];
      m[i] = m[i] * b1 + one_minus_b1 * d;
      v[i] = v[i] * b2 + one_minus_b2 * d * d;
      float second = v[i];
      if (vmax != nullptr) {
        vmax[i] = std::max(vmax[i], v[i]);
        second = vmax[i];
      }
      const float denom = std::sqrt(second) / bc2_sqrt + eps;
      // addcdiv_ computes (value * t1) / t2
      p[i] += neg_step_size * m[i] / denom;
    }
  });
}

}  // namespace

DDP4J_REGISTER_KERNEL(adam_step, CPU, adam_step);

}  // namespace ddp4j::cpu
