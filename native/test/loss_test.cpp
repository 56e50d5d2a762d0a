// ctest: MSE and cross-entropy on hand-computed values, stability for huge logits, target checks.
#include <cmath>
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
Tensor labels(const std::vector<int64_t>& v) {
  Tensor t = Tensor::empty({static_cast<int64_t>(v.size())}, DType::Int64);
  for (size_t i = 0; i < v.size(); ++i) t.data<int64_t>()[i] = v[i];
  return t;
}
}  // namespace

int main() {
  // MSE: mean of (1, 4, 0, 9) = 3.5; gradient 2 (x - t) / 4.
  Tensor in = from({1, 2, 3, 4}, {2, 2});
  Tensor tg = from({0, 0, 3, 7}, {2, 2});
  CHECK_NEAR(ops::mse_loss_forward(in, tg).data<float>()[0], 3.5, 1e-6);
  Tensor gm = ops::mse_loss_backward(from({1}, {}), in, tg);
  CHECK_NEAR(gm.data<float>()[1], 1.0, 1e-6);
  CHECK_NEAR(gm.data<float>()[3], -1.5, 1e-6);

  // Cross entropy, uniform logits: loss = log(C), probs = 1/C.
  Tensor logits = from({0, 0, 0, 0}, {1, 4});
  std::vector<Tensor> ce = ops::cross_entropy_forward(logits, labels({2}));
  CHECK_NEAR(ce[0].data<float>()[0], std::log(4.0), 1e-6);
  CHECK_NEAR(ce[1].data<float>()[3], 0.25, 1e-7);
  Tensor gl = ops::cross_entropy_backward(from({1}, {}), ce[1], labels({2}));
  CHECK_NEAR(gl.data<float>()[2], -0.75, 1e-6);
  CHECK_NEAR(gl.data<float>()[0], 0.25, 1e-6);

  // Huge logits: finite, exact. Row 0 picks the winner (loss 0), row 1 the loser (loss 2000),
  // row 2 ±1e4 with the loser as target (loss 2e4). Mean = 22000 / 3.
  Tensor big = from({1000, -1000, -1000, 1000, 1e4f, -1e4f}, {3, 2});
  std::vector<Tensor> cb = ops::cross_entropy_forward(big, labels({0, 0, 1}));
  CHECK(std::isfinite(cb[0].data<float>()[0]));
  CHECK_NEAR(cb[0].data<float>()[0], 22000.0 / 3.0, 1e-2);
  for (int i = 0; i < 6; ++i) CHECK(std::isfinite(cb[1].data<float>()[i]));
  Tensor gb = ops::cross_entropy_backward(from({1}, {}), cb[1], labels({0, 0, 1}));
  CHECK_NEAR(gb.data<float>()[0], 0, 1e-7);
  CHECK_NEAR(gb.data<float>()[2], -1.0 / 3.0, 1e-6);
  CHECK_NEAR(gb.data<float>()[3], 1.0 / 3.0, 1e-6);

  // A target outside [0, C) names the value and C.
  bool threw = false;
  try {
    ops::cross_entropy_forward(from({0, 0, 0, 0, 0, 0}, {2, 3}), labels({1, 7}));
  } catch (const Error& e) {
    threw = true;
    std::string m = e.what();
    CHECK(e.kind() == ErrorKind::InvalidArgument);
    CHECK(m.find("target 7") != std::string::npos && m.find("3 classes") != std::string::npos);
  }
  CHECK(threw);
  threw = false;
  try {
    ops::cross_entropy_forward(from({0, 0, 0, 0, 0, 0}, {2, 3}), labels({-1, 0}));
  } catch (const Error& e) {
    threw = std::string(e.what()).find("target -1") != std::string::npos;
  }
  CHECK(threw);
  return test_failures();
}
