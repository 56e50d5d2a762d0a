// ctest: the Adam / AdamW kernel against values worked out by hand from torch.optim.Adam's update
// rule (the Java golden tests compare several steps with PyTorch itself).
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "ddp4j/ops.h"
#include "test_util.h"

using namespace ddp4j;

namespace {
Tensor scalar_like(float v) {
  Tensor t = Tensor::empty({1}, DType::Float32);
  t.data<float>()[0] = v;
  return t;
}

float value(const Tensor& t) { return t.data<float>()[0]; }

Tensor filled(int64_t n, uint64_t seed) {
  Tensor t = Tensor::empty({n}, DType::Float32);
  for (int64_t i = 0; i < n; ++i) {
    t.data<float>()[i] = static_cast<float>(test::mix(seed * 7919 + static_cast<uint64_t>(i)) % 2001) / 1000.0f - 1.0f;
  }
  return t;
}

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.nbytes() == b.nbytes() && std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0;
}

/** One parameter's tensors, each a fresh copy of the same starting values. */
struct State {
  Tensor p, g, m, v, vmax;
  explicit State(int64_t n, uint64_t seed)
      : p(filled(n, seed)), g(filled(n, seed + 1)), m(filled(n, seed + 2)), v(filled(n, seed + 3)),
        vmax(filled(n, seed + 4)) {
    for (Tensor* t : {&v, &vmax}) {
      for (int64_t i = 0; i < n; ++i) t->data<float>()[i] = std::fabs(t->data<float>()[i]);
    }
  }
};

/**
 * adam_steps_ over parameters of several sizes, each at its own step, against adam_step_ once per
 * parameter: the same bits in every tensor (Adam's L2 term, AdamW, AMSGrad).
 */
void check_group_equals_per_tensor(const kernels::AdamOptions& o) {
  const std::vector<int64_t> sizes{1, 17, 70001, 3, 40000};
  std::vector<State> one_by_one, grouped;
  for (size_t k = 0; k < sizes.size(); ++k) {
    one_by_one.emplace_back(sizes[k], 10 * k + 1);
    grouped.emplace_back(sizes[k], 10 * k + 1);
  }
  std::vector<kernels::AdamTensors> group;
  for (size_t k = 0; k < sizes.size(); ++k) {
    const int64_t step = 1 + static_cast<int64_t>(k) * 3;
    State& a = one_by_one[k];
    ops::adam_step_(a.p, a.g, a.m, a.v, a.vmax, o, step);
    State& b = grouped[k];
    group.push_back({&b.p, &b.g, &b.m, &b.v, &b.vmax, step});
  }
  ops::adam_steps_(group, o);
  for (size_t k = 0; k < sizes.size(); ++k) {
    const State& a = one_by_one[k];
    const State& b = grouped[k];
    CHECK(same_bits(a.p, b.p) && same_bits(a.m, b.m) && same_bits(a.v, b.v) && same_bits(a.vmax, b.vmax));
  }
}

bool throws_with(const std::string& needle, void (*body)()) {
  try {
    body();
  } catch (const Error& e) {
    return std::string(e.what()).find(needle) != std::string::npos;
  }
  return false;
}
}  // namespace

int main() {
  // First step, gradient 0.5, lr 0.1: m = 0.05, v = 0.00025; bias-corrected m / sqrt(v) = 1, so p = 1 - 0.1.
  {
    Tensor p = scalar_like(1), g = scalar_like(0.5f), m = scalar_like(0), v = scalar_like(0), none;
    kernels::AdamOptions o;
    o.lr = 0.1;
    ops::adam_step_(p, g, m, v, none, o, 1);
    CHECK_NEAR(value(m), 0.05, 1e-7);
    CHECK_NEAR(value(v), 0.00025, 1e-9);
    CHECK_NEAR(value(p), 0.9, 1e-6);
  }
  // AdamW, weight decay 0.1: p = 1 * (1 - 0.1 * 0.1) - 0.1 = 0.89; Adam's L2 term (g = 0.6) still steps 0.1.
  {
    Tensor p = scalar_like(1), g = scalar_like(0.5f), m = scalar_like(0), v = scalar_like(0), none;
    kernels::AdamOptions o;
    o.lr = 0.1;
    o.weight_decay = 0.1;
    o.decoupled = true;
    ops::adam_step_(p, g, m, v, none, o, 1);
    CHECK_NEAR(value(p), 0.89, 1e-6);
    Tensor q = scalar_like(1), m2 = scalar_like(0), v2 = scalar_like(0);
    o.decoupled = false;
    ops::adam_step_(q, g, m2, v2, none, o, 1);
    CHECK_NEAR(value(m2), 0.06, 1e-7);
    CHECK_NEAR(value(q), 0.9, 1e-6);
  }
  // AMSGrad: after gradients 0.5 then 0, v falls to 0.999 * 0.00025 but the maximum keeps 0.00025.
  {
    Tensor p = scalar_like(0), g = scalar_like(0.5f), m = scalar_like(0), v = scalar_like(0), vmax = scalar_like(0);
    kernels::AdamOptions o;
    o.lr = 0.1;
    o.amsgrad = true;
    ops::adam_step_(p, g, m, v, vmax, o, 1);
    g.data<float>()[0] = 0;
    ops::adam_step_(p, g, m, v, vmax, o, 2);
    CHECK_NEAR(value(v), 0.999 * 0.00025, 1e-9);
    CHECK_NEAR(value(vmax), 0.00025, 1e-9);
    // step 2: m = 0.045, lr / (1 - 0.81) * m / (sqrt(vmax) / sqrt(1 - 0.999^2) + eps)
    const double expected = -0.1 - 0.1 / 0.19 * 0.045 / (std::sqrt(0.00025) / std::sqrt(1 - 0.999 * 0.999) + 1e-8);
    CHECK_NEAR(value(p), expected, 1e-6);
  }
  // A group in one call gives each parameter's own update, bit for bit.
  for (int variant = 0; variant < 3; ++variant) {
    kernels::AdamOptions o;
    o.lr = 0.01;
    o.weight_decay = 0.1;
    o.decoupled = variant >= 1;
    o.amsgrad = variant == 2;
    check_group_equals_per_tensor(o);
  }
  // Bad arguments name the problem.
  CHECK(throws_with("adam: invalid beta parameter at index 0: 1", [] {
    Tensor p = scalar_like(0), g = scalar_like(0), m = scalar_like(0), v = scalar_like(0), none;
    kernels::AdamOptions o;
    o.beta1 = 1;
    ops::adam_step_(p, g, m, v, none, o, 1);
  }));
  CHECK(throws_with("adam: missing max_exp_avg_sq", [] {
    Tensor p = scalar_like(0), g = scalar_like(0), m = scalar_like(0), v = scalar_like(0), none;
    kernels::AdamOptions o;
    o.amsgrad = true;
    ops::adam_step_(p, g, m, v, none, o, 1);
  }));
  CHECK(throws_with("adam: param [2] and exp_avg [3] must have the same shape", [] {
    Tensor p = Tensor::zeros({2}, DType::Float32), g = Tensor::zeros({2}, DType::Float32);
    Tensor m = Tensor::zeros({3}, DType::Float32), v = Tensor::zeros({2}, DType::Float32);
    std::vector<kernels::AdamTensors> group{{&p, &g, &m, &v, nullptr, 1}};
    ops::adam_steps_(group, kernels::AdamOptions());
  }));
  return test_failures();
}
