// ctest: the fused batch_norm2d_relu ops give the bits of the unfused composition — batch norm,
// then (with a residual) add, then relu; forward in train and eval mode, and the backward's gx,
// ggamma, gbeta and the residual's gradient against relu_backward + batch_norm2d_backward — on a
// plane size with a vector tail (7 x 9), one without (16 x 16) and large planes (96 x 96, cache
// blocked), with negative values and zeros; and batch_norm2d_recompute, which makes the
// forward's y again from x and the forward's affine output, bit for bit (and the plain batch
// norm's, relu false); the backward with the ReLU's mask formed from x and affine instead of y.
#include <cstring>
#include <string>
#include <vector>

#include "ddp4j/ops.h"
#include "test_util.h"

using namespace ddp4j;

namespace {

Tensor random(const Shape& shape, uint64_t seed, float lo = -1, float hi = 1) {
  Tensor t = Tensor::empty(shape, DType::Float32);
  float* p = t.data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) {
    p[i] = lo + (hi - lo) * static_cast<float>(test::mix(seed * 1000003 + static_cast<uint64_t>(i)) % 1000001) / 1e6f;
  }
  return t;
}

Tensor clone(const Tensor& t) {
  Tensor c = Tensor::empty(t.shape(), t.dtype());
  std::memcpy(c.raw_data(), t.raw_data(), t.nbytes());
  return c;
}

bool same_bits(const std::string& what, const Tensor& a, const Tensor& b) {
  const bool same = a.nbytes() == b.nbytes() && std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0;
  if (!same) std::fprintf(stderr, "%s: fused and unfused results differ\n", what.c_str());
  return same;
}

void check_case(int64_t h, int64_t w, bool with_residual) {
  const std::string name = std::to_string(h) + "x" + std::to_string(w) + (with_residual ? " +residual" : "");
  const int64_t n = 3, c = 5;
  const Tensor x = random({n, c, h, w}, 1, -3, 4), gamma = random({c}, 2, 0.5f, 2), beta = random({c}, 3);
  const Tensor residual = with_residual ? random({n, c, h, w}, 4) : Tensor();
  const Tensor rm0 = random({c}, 5), rv0 = random({c}, 6, 0.5f, 2), gy = random({n, c, h, w}, 7);

  // Unfused: bn, add, relu; backward relu_backward then bn backward.
  Tensor rm_a = clone(rm0), rv_a = clone(rv0);
  std::vector<Tensor> bn = ops::batch_norm2d_forward_train(x, gamma, beta, rm_a, rv_a, 0.1, 1e-5);
  Tensor z = with_residual ? ops::add(bn[0], residual, 1.0f) : bn[0];
  Tensor y = ops::relu_forward(z);
  Tensor gz = ops::relu_backward(gy, y);
  std::vector<Tensor> g = ops::batch_norm2d_backward(gz, x, gamma, bn[1], bn[2]);
  Tensor z_eval = ops::batch_norm2d_forward_eval(x, gamma, beta, rm0, rv0, 1e-5);
  Tensor y_eval = ops::relu_forward(with_residual ? ops::add(z_eval, residual, 1.0f) : z_eval);

  Tensor rm_b = clone(rm0), rv_b = clone(rv0);
  std::vector<Tensor> f = ops::batch_norm2d_relu_forward_train(x, gamma, beta, rm_b, rv_b, 0.1, 1e-5, residual);
  CHECK(same_bits(name + " y", f[0], y));
  CHECK(same_bits(name + " save_mean", f[1], bn[1]));
  CHECK(same_bits(name + " save_invstd", f[2], bn[2]));
  CHECK(same_bits(name + " running_mean", rm_b, rm_a));
  CHECK(same_bits(name + " running_var", rv_b, rv_a));
  CHECK(f.size() == 4u && f[3].shape() == Shape({2, c}));
  CHECK(same_bits(name + " recomputed y", ops::batch_norm2d_recompute(x, f[3], residual, true), f[0]));
  CHECK(bn.size() == 4u && bn[3].shape() == Shape({2, c}));
  CHECK(same_bits(name + " recomputed plain y", ops::batch_norm2d_recompute(x, bn[3], Tensor(), false), bn[0]));
  CHECK(same_bits(name + " eval y", ops::batch_norm2d_relu_forward_eval(x, gamma, beta, rm0, rv0, 1e-5, residual),
                  y_eval));
  for (bool want_masked : {false, true}) {
    std::vector<Tensor> fg = ops::batch_norm2d_relu_backward(gy, f[0], x, gamma, f[1], f[2], want_masked);
    CHECK(fg.size() == (want_masked ? 4u : 3u));
    const std::string tag = name + (want_masked ? " (masked grad out)" : "");
    CHECK(same_bits(tag + " gx", fg[0], g[0]));
    CHECK(same_bits(tag + " ggamma", fg[1], g[1]));
    CHECK(same_bits(tag + " gbeta", fg[2], g[2]));
    if (want_masked) CHECK(same_bits(tag + " grad residual", fg[3], gz));
    if (!with_residual) {  // the mask formed from x and the affine output instead of read from y
      std::vector<Tensor> fx = ops::batch_norm2d_relu_backward(gy, Tensor(), x, gamma, f[1], f[2], want_masked, f[3]);
      CHECK(same_bits(tag + " gx (mask from x)", fx[0], g[0]));
      CHECK(same_bits(tag + " ggamma (mask from x)", fx[1], g[1]));
      CHECK(same_bits(tag + " gbeta (mask from x)", fx[2], g[2]));
      if (want_masked) CHECK(same_bits(tag + " masked grad (mask from x)", fx[3], gz));
    }
  }
}

}  // namespace

int main() {
  for (bool with_residual : {false, true}) {
    check_case(7, 9, with_residual);
    check_case(16, 16, with_residual);
    check_case(96, 96, with_residual);  // large planes: the passes go channel block by block
  }
  // A residual of another shape is refused with both shapes in the message.
  const Tensor x = random({2, 3, 4, 4}, 8), gamma = random({3}, 9), beta = random({3}, 10);
  Tensor rm = random({3}, 11), rv = random({3}, 12, 0.5f, 2);
  bool threw = false;
  try {
    ops::batch_norm2d_relu_forward_train(x, gamma, beta, rm, rv, 0.1, 1e-5, random({2, 3, 4, 5}, 13));
  } catch (const Error& e) {
    threw = std::string(e.what()).find("[2, 3, 4, 5]") != std::string::npos;
    if (!threw) std::fprintf(stderr, "message: %s\n", e.what());
  }
  CHECK(threw);
  // The backward takes y or affine, exactly one.
  threw = false;
  try {
    std::vector<Tensor> f = ops::batch_norm2d_relu_forward_train(x, gamma, beta, rm, rv, 0.1, 1e-5, Tensor());
    ops::batch_norm2d_relu_backward(f[0], f[0], x, gamma, f[1], f[2], false, f[3]);
  } catch (const Error& e) {
    threw = std::string(e.what()).find("not both") != std::string::npos;
    if (!threw) std::fprintf(stderr, "message: %s\n", e.what());
  }
  CHECK(threw);
  // An affine of another channel count is refused, naming the shape it must have.
  threw = false;
  try {
    ops::batch_norm2d_recompute(x, random({2, 4}, 14), Tensor(), true);
  } catch (const Error& e) {
    threw = std::string(e.what()).find("[2, 3]") != std::string::npos;
    if (!threw) std::fprintf(stderr, "message: %s\n", e.what());
  }
  CHECK(threw);
  return test_failures();
}
