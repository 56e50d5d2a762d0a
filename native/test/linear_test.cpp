// ctest: linear and ReLU ops on tiny hand-computed examples, plus the shape-mismatch message.
#include <string>
#include <vector>

#include "ddp4j/ops.h"
#include "test_util.h"

using namespace ddp4j;

namespace {
Tensor from(const std::vector<float>& v, const Shape& shape) {
  Tensor t = Tensor::empty(shape, DType::Float32);
  for (size_t i = 0; i < v.size(); ++i) t.data<float>()[i] = v[i];
  return t;
}
}  // namespace

int main() {
  // x [2, 3], w [2, 3], b [2]: y = x·wᵀ + b
  Tensor x = from({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor w = from({1, 0, -1, 0.5f, 0.5f, 0.5f}, {2, 3});
  Tensor b = from({10, -1}, {2});
  Tensor y = ops::linear_forward(x, w, b);
  CHECK(y.shape() == Shape({2, 2}));
  const float* py = y.data<float>();
  CHECK_NEAR(py[0], 1 - 3 + 10, 1e-6);
  CHECK_NEAR(py[1], 3 - 1, 1e-6);
  CHECK_NEAR(py[2], 4 - 6 + 10, 1e-6);
  CHECK_NEAR(py[3], 7.5 - 1, 1e-6);

  Tensor y0 = ops::linear_forward(x, w, Tensor());
  CHECK_NEAR(y0.data<float>()[0], -2, 1e-6);
  CHECK_NEAR(y0.data<float>()[3], 7.5, 1e-6);

  // gy = ones: gx = column sums of w per row, gw = column sums of x, gb = N.
  Tensor gy = from({1, 1, 1, 1}, {2, 2});
  std::vector<Tensor> g = ops::linear_backward(gy, x, w, true, true);
  CHECK(g[0].shape() == Shape({2, 3}) && g[1].shape() == Shape({2, 3}) && g[2].shape() == Shape({2}));
  CHECK_NEAR(g[0].data<float>()[0], 1.5, 1e-6);
  CHECK_NEAR(g[0].data<float>()[2], -0.5, 1e-6);
  CHECK_NEAR(g[1].data<float>()[0], 5, 1e-6);
  CHECK_NEAR(g[1].data<float>()[5], 9, 1e-6);
  CHECK_NEAR(g[2].data<float>()[1], 2, 1e-6);
  std::vector<Tensor> g2 = ops::linear_backward(gy, x, w, false, false);
  CHECK(!g2[0].defined() && g2[1].defined() && !g2[2].defined());

  // Leading dimensions are flattened: x [2, 1, 3] -> y [2, 1, 2].
  Tensor y3 = ops::linear_forward(x.view({2, 1, 3}), w, b);
  CHECK(y3.shape() == Shape({2, 1, 2}));
  CHECK_NEAR(y3.data<float>()[2], 8, 1e-6);

  // The mismatch message names the op and both shapes.
  Tensor wbad = Tensor::zeros({2, 5}, DType::Float32);
  bool threw = false;
  try {
    ops::linear_forward(x, wbad, Tensor());
  } catch (const Error& e) {
    threw = true;
    std::string m = e.what();
    CHECK(e.kind() == ErrorKind::InvalidArgument);
    CHECK(m.find("linear") != std::string::npos);
    CHECK(m.find("[2, 3]") != std::string::npos && m.find("[2, 5]") != std::string::npos);
  }
  CHECK(threw);

  // ReLU: gradient passes only where the output is positive (0 at 0).
  Tensor r = from({-1, 0, 2}, {3});
  Tensor ry = ops::relu_forward(r);
  CHECK(ry.data<float>()[0] == 0 && ry.data<float>()[1] == 0 && ry.data<float>()[2] == 2);
  Tensor rg = ops::relu_backward(from({5, 5, 5}, {3}), ry);
  CHECK(rg.data<float>()[0] == 0 && rg.data<float>()[1] == 0 && rg.data<float>()[2] == 5);
  return test_failures();
}
