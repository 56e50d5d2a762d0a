// ctest: the SGD kernel against values worked out by hand from torch.optim.SGD's update rule.
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
}  // namespace

int main() {
  // Plain SGD with weight decay: p = 1 - 0.1 * (0.5 + 0.01 * 1) = 0.949.
  {
    Tensor p = scalar_like(1), g = scalar_like(0.5f), none;
    kernels::SgdOptions o;
    o.lr = 0.1;
    o.weight_decay = 0.01;
    ops::sgd_step_(p, g, none, o, true);
    CHECK_NEAR(p.data<float>()[0], 0.949, 1e-6);
  }
  // Momentum 0.9, dampening 0.5, gradient 1 each step: buf = 1, then 0.9 + 0.5 = 1.4.
  {
    Tensor p = scalar_like(0), g = scalar_like(1), buf = scalar_like(0);
    kernels::SgdOptions o;
    o.lr = 1;
    o.momentum = 0.9;
    o.dampening = 0.5;
    ops::sgd_step_(p, g, buf, o, true);
    CHECK_NEAR(buf.data<float>()[0], 1, 1e-6);
    CHECK_NEAR(p.data<float>()[0], -1, 1e-6);
    ops::sgd_step_(p, g, buf, o, false);
    CHECK_NEAR(buf.data<float>()[0], 1.4, 1e-6);
    CHECK_NEAR(p.data<float>()[0], -2.4, 1e-6);
  }
  // Nesterov: step = g + momentum * buf; first step buf = g = 1, step 1.9.
  {
    Tensor p = scalar_like(0), g = scalar_like(1), buf = scalar_like(0);
    kernels::SgdOptions o;
    o.lr = 1;
    o.momentum = 0.9;
    o.nesterov = true;
    ops::sgd_step_(p, g, buf, o, true);
    CHECK_NEAR(p.data<float>()[0], -1.9, 1e-6);
  }
  // Nesterov with dampening is rejected with PyTorch's message.
  {
    Tensor p = scalar_like(0), g = scalar_like(1), buf = scalar_like(0);
    kernels::SgdOptions o;
    o.momentum = 0.9;
    o.dampening = 0.1;
    o.nesterov = true;
    bool threw = false;
    try {
      ops::sgd_step_(p, g, buf, o, true);
    } catch (const Error& e) {
      threw = std::string(e.what()).find("nesterov momentum requires a momentum and zero dampening") != std::string::npos;
    }
    CHECK(threw);
  }
  return test_failures();
}
