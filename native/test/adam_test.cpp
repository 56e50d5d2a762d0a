// ctest: the Adam / AdamW kernel against values worked out by hand from torch.optim.Adam's update
// rule (the Java golden tests compare several steps with PyTorch itself).
#include <cmath>
#include <string>

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
  return test_failures();
}
