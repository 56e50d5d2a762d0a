// CPU kernels for torch.optim.Adam / AdamW updates, in place: one tensor (adam_step) or a whole
// parameter group in one call (adam_steps, PyTorch's fused / foreach path). Both follow PyTorch
// 1.13's _single_tensor_adam(w) op by op in float32 with float coefficients (bias corrections in
// double, as Python computes them), through the same inlined update, so the group call gives the
// per-tensor call's bits. The group's elements form one range that the intra-op threads split;
// each element's update is independent of the others, so any thread count gives the same bits.
#include <algorithm>
#include <cmath>
#include <vector>

#include "ddp4j/dispatch.h"
#include "ddp4j/kernels.h"
#include "ddp4j/parallel.h"
#include "vector_math.h"

namespace ddp4j::cpu {
namespace {

/** One tensor's float coefficients for its own step number. */
struct Coefficients {
  float decay, wd, b1, one_minus_b1, b2, one_minus_b2, bc2_sqrt, neg_step_size, eps;
};

Coefficients coefficients_for(const kernels::AdamOptions& o, int64_t step) {
  const double s = static_cast<double>(step);
  Coefficients c;
  c.decay = o.decoupled ? static_cast<float>(1.0 - o.lr * o.weight_decay) : 1.0f;
  c.wd = o.decoupled ? 0.0f : static_cast<float>(o.weight_decay);
  c.b1 = static_cast<float>(o.beta1);
  c.one_minus_b1 = static_cast<float>(1.0 - o.beta1);
  c.b2 = static_cast<float>(o.beta2);
  c.one_minus_b2 = static_cast<float>(1.0 - o.beta2);
  c.bc2_sqrt = static_cast<float>(std::sqrt(1.0 - std::pow(o.beta2, s)));
  c.neg_step_size = static_cast<float>(-(o.lr / (1.0 - std::pow(o.beta1, s))));
  c.eps = static_cast<float>(o.eps);
  return c;
}

/** Pointers into one tensor's param, grad and state, offset to the first element to update. */
struct Slices {
  float* p;
  const float* g;
  float* m;
  float* v;
  float* vmax;  // null without amsgrad
};

// Branch-free in the loop (the flags are template arguments), so it vectorises.
template <bool kDecoupled, bool kL2, bool kAmsgrad>
__attribute__((always_inline)) inline void update(const Coefficients& c, Slices s, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    float p = s.p[i];
    if (kDecoupled) p *= c.decay;
    const float d = kL2 ? s.g[i] + c.wd * p : s.g[i];
    const float m = s.m[i] * c.b1 + c.one_minus_b1 * d;
    const float v = s.v[i] * c.b2 + c.one_minus_b2 * d * d;
    s.m[i] = m;
    s.v[i] = v;
    float second = v;
    if (kAmsgrad) {
      second = std::max(s.vmax[i], v);
      s.vmax[i] = second;
    }
    const float denom = std::sqrt(second) / c.bc2_sqrt + c.eps;
    // addcdiv_ computes (value * t1) / t2
    s.p[i] = p + c.neg_step_size * m / denom;
  }
}

DDP4J_VECTOR_CLONES void update_slices(const Coefficients& c, Slices s, int64_t n) {
  const bool decoupled = c.decay != 1.0f, l2 = c.wd != 0.0f, amsgrad = s.vmax != nullptr;
  if (amsgrad) {
    if (decoupled) update<true, false, true>(c, s, n);
    else if (l2) update<false, true, true>(c, s, n);
    else update<false, false, true>(c, s, n);
  } else {
    if (decoupled) update<true, false, false>(c, s, n);
    else if (l2) update<false, true, false>(c, s, n);
    else update<false, false, false>(c, s, n);
  }
}

Slices slices_of(kernels::AdamTensors& t, int64_t from) {
  return {t.param->data<float>() + from, t.grad->data<float>() + from, t.exp_avg->data<float>() + from,
          t.exp_avg_sq->data<float>() + from, t.max_exp_avg_sq ? t.max_exp_avg_sq->data<float>() + from : nullptr};
}

void adam_steps(std::vector<kernels::AdamTensors>& group, const kernels::AdamOptions& o) {
  std::vector<Coefficients> coefficients;
  std::vector<int64_t> starts{0};  // starts[k]: tensor k's first element in the group's range
  for (auto& t : group) {
    coefficients.push_back(coefficients_for(o, t.step));
    starts.push_back(starts.back() + t.param->numel());
  }
  parallel_for(0, starts.back(), kGrainSize / 4, [&](int64_t lo, int64_t hi) {
    auto k = static_cast<std::size_t>(std::upper_bound(starts.begin(), starts.end(), lo) - starts.begin() - 1);
    for (int64_t at = lo; at < hi; ++k) {
      const int64_t end = std::min(hi, starts[k + 1]);
      update_slices(coefficients[k], slices_of(group[k], at - starts[k]), end - at);
      at = end;
    }
  });
}

void adam_step(Tensor& param, const Tensor& grad, Tensor& exp_avg, Tensor& exp_avg_sq, Tensor& max_exp_avg_sq,
               const kernels::AdamOptions& o, int64_t step) {
  std::vector<kernels::AdamTensors> one{{&param, &grad, &exp_avg, &exp_avg_sq, o.amsgrad ? &max_exp_avg_sq : nullptr,
                                         step}};
  adam_steps(one, o);
}

}  // namespace

DDP4J_REGISTER_KERNEL(adam_step, CPU, adam_step);
DDP4J_REGISTER_KERNEL(adam_steps, CPU, adam_steps);

}  // namespace ddp4j::cpu
