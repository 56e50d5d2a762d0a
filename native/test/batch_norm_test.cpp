// BatchNorm2d kernels: statistics, running-stat update (unbiased variance, momentum) and the
// gradient identities Σ gx = 0 and Σ gx·xhat ≈ 0 per channel when gamma = 1 (not exactly 0:
// Σ xhat² = n·var/(var + eps), so a residue of order eps remains).
#include <cmath>
#include <cstring>
#include <vector>

#include "ddp4j/ops.h"
#include "tensor_util.h"
#include "test_util.h"

using namespace ddp4j;
using ddp4j::test::make;

int main() {
  // Two images, two channels, 1x2 pixels. Channel 0 holds 1, 2, 3, 4; channel 1 holds 1000 + 0, 0, 0, 4.
  Tensor x = make({2, 2, 1, 2}, {1, 2, 1000, 1000, 3, 4, 1000, 1004});
  Tensor gamma = make({2}, {1, 2});
  Tensor beta = make({2}, {0, 0.5f});
  Tensor rm = make({2}, {0, 0});
  Tensor rv = make({2}, {1, 1});
  auto out = ops::batch_norm2d_forward_train(x, gamma, beta, rm, rv, 0.1, 1e-5);
  CHECK_NEAR(out[1].data<float>()[0], 2.5, 1e-6);
  CHECK_NEAR(out[1].data<float>()[1], 1001, 1e-3);
  // Channel 0: biased var 1.25, unbiased 5/3. Channel 1: biased var 3, unbiased 4.
  CHECK_NEAR(out[2].data<float>()[0], 1 / std::sqrt(1.25 + 1e-5), 1e-6);
  CHECK_NEAR(out[2].data<float>()[1], 1 / std::sqrt(3 + 1e-5), 1e-6);
  CHECK_NEAR(rm.data<float>()[0], 0.25, 1e-6);
  CHECK_NEAR(rm.data<float>()[1], 100.1, 1e-4);
  CHECK_NEAR(rv.data<float>()[0], 0.9 + 0.1 * 5.0 / 3.0, 1e-6);
  CHECK_NEAR(rv.data<float>()[1], 0.9 + 0.4, 1e-6);
  // y of channel 1 at the value 1004: (1004 - 1001) / sqrt(3) * 2 + 0.5
  CHECK_NEAR(out[0].data<float>()[7], 3 / std::sqrt(3 + 1e-5) * 2 + 0.5, 1e-4);

  Tensor gy = make({2, 2, 1, 2}, {0.3f, -1, 2, 0.5f, 1, 0.25f, -0.75f, 4});
  Tensor ones = make({2}, {1, 1});
  auto grads = ops::batch_norm2d_backward(gy, x, ones, out[1], out[2]);
  for (int c = 0; c < 2; ++c) {
    double sum = 0, dot = 0, sum_gy = 0;
    for (int n = 0; n < 2; ++n)
      for (int j = 0; j < 2; ++j) {
        const int i = (n * 2 + c) * 2 + j;
        const double xhat = (x.data<float>()[i] - out[1].data<float>()[c]) * out[2].data<float>()[c];
        sum += grads[0].data<float>()[i];
        dot += grads[0].data<float>()[i] * xhat;
        sum_gy += gy.data<float>()[i];
      }
    CHECK_NEAR(sum, 0, 1e-5);
    CHECK_NEAR(dot, 0, 1e-4);
    CHECK_NEAR(grads[2].data<float>()[c], sum_gy, 1e-6);
  }

  // Eval uses the running statistics.
  Tensor y = ops::batch_norm2d_forward_eval(x, gamma, beta, rm, rv, 1e-5);
  CHECK_NEAR(y.data<float>()[0], (1 - 0.25) / std::sqrt(0.9 + 0.1 * 5.0 / 3.0 + 1e-5), 1e-5);

  // One value per channel cannot be normalised in training.
  Tensor one = make({1, 2, 1, 1}, {1, 2});
  try {
    ops::batch_norm2d_forward_train(one, gamma, beta, rm, rv, 0.1, 1e-5);
    CHECK(false);
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::InvalidArgument);
  }
  return test_failures();
}
