// Conv2d kernels: a hand-computed one-channel example, then forward and all three gradients
// against a direct (seven-loop) convolution for several geometries, including chunked batches.
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "cpu/conv_direct.h"
#include "ddp4j/ops.h"
#include "test_util.h"

using namespace ddp4j;

namespace {

Tensor make(const Shape& shape, const std::vector<float>& values) {
  Tensor t = Tensor::empty(shape, DType::Float32);
  std::memcpy(t.data<float>(), values.data(), values.size() * sizeof(float));
  return t;
}

Tensor random_tensor(const Shape& shape, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  Tensor t = Tensor::empty(shape, DType::Float32);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = u(rng);
  return t;
}

void hand_computed() {
  // x = 1..9 as 3x3, w = [[1, 0], [0, 1]] (main diagonal), bias 0.5: y = x[i][j] + x[i+1][j+1] + 0.5.
  Tensor x = make({1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  Tensor w = make({1, 1, 2, 2}, {1, 0, 0, 1});
  Tensor b = make({1}, {0.5f});
  Tensor y = ops::conv2d_forward(x, w, b, {});
  CHECK(y.shape() == (Shape{1, 1, 2, 2}));
  const float expected[] = {6.5f, 8.5f, 12.5f, 14.5f};
  for (int i = 0; i < 4; ++i) CHECK_NEAR(y.data<float>()[i], expected[i], 0);

  // Padding 1, stride 2 on the same input: window (p, q) covers rows 2p-1..2p and columns
  // 2q-1..2q, so with the diagonal kernel y = x[2p-1][2q-1] + x[2p][2q] (padding reads as 0).
  kernels::Conv2dGeometry g;
  g.stride_h = g.stride_w = 2;
  g.pad_h = g.pad_w = 1;
  Tensor y2 = ops::conv2d_forward(x, w, Tensor(), g);
  CHECK(y2.shape() == (Shape{1, 1, 2, 2}));
  const float expected2[] = {0 + 1, 0 + 3, 0 + 7, 5 + 9};
  for (int i = 0; i < 4; ++i) CHECK_NEAR(y2.data<float>()[i], expected2[i], 0);

  // Backward of the unpadded case with gy = 1: gb = 4, gw[r][s] = sum of the 2x2 block of x at
  // offset (r, s), gx[h][w] = number of windows that use x[h][w] on the kernel's diagonal.
  Tensor gy = make({1, 1, 2, 2}, {1, 1, 1, 1});
  auto grads = ops::conv2d_backward(gy, x, w, true, true, {});
  const float gw[] = {1 + 2 + 4 + 5, 2 + 3 + 5 + 6, 4 + 5 + 7 + 8, 5 + 6 + 8 + 9};
  for (int i = 0; i < 4; ++i) CHECK_NEAR(grads[1].data<float>()[i], gw[i], 0);
  CHECK_NEAR(grads[2].data<float>()[0], 4, 0);
  const float gx[] = {1, 1, 0, 1, 2, 1, 0, 1, 1};
  for (int i = 0; i < 9; ++i) CHECK_NEAR(grads[0].data<float>()[i], gx[i], 0);
}

struct Case {
  int64_t N, C, H, W, K, R, S;
  int sh, sw, ph, pw;
};

void against_direct(const Case& c, std::mt19937& rng) {
  kernels::Conv2dGeometry g;
  g.stride_h = c.sh;
  g.stride_w = c.sw;
  g.pad_h = c.ph;
  g.pad_w = c.pw;
  Tensor x = random_tensor({c.N, c.C, c.H, c.W}, rng);
  Tensor w = random_tensor({c.K, c.C, c.R, c.S}, rng);
  Tensor b = random_tensor({c.K}, rng);
  Tensor y = ops::conv2d_forward(x, w, b, g);
  const int64_t P = (c.H + 2 * c.ph - c.R) / c.sh + 1, Q = (c.W + 2 * c.pw - c.S) / c.sw + 1;
  CHECK(y.shape() == (Shape{c.N, c.K, P, Q}));
  Tensor gy = random_tensor(y.shape(), rng);
  auto grads = ops::conv2d_backward(gy, x, w, true, true, g);

  const float* px = x.data<float>();
  const float* pw = w.data<float>();
  const float* pgy = gy.data<float>();
  std::vector<double> ry(y.numel()), rgx(x.numel()), rgw(w.numel()), rgb(c.K);
  for (int64_t n = 0; n < c.N; ++n)
    for (int64_t k = 0; k < c.K; ++k)
      for (int64_t p = 0; p < P; ++p)
        for (int64_t q = 0; q < Q; ++q) {
          const int64_t yi = ((n * c.K + k) * P + p) * Q + q;
          double acc = b.data<float>()[k];
          rgb[k] += pgy[yi];
          for (int64_t ch = 0; ch < c.C; ++ch)
            for (int64_t r = 0; r < c.R; ++r)
              for (int64_t s = 0; s < c.S; ++s) {
                const int64_t h = p * c.sh - c.ph + r, ww = q * c.sw - c.pw + s;
                if (h < 0 || h >= c.H || ww < 0 || ww >= c.W) continue;
                const int64_t xi = ((n * c.C + ch) * c.H + h) * c.W + ww, wi = ((k * c.C + ch) * c.R + r) * c.S + s;
                acc += double(px[xi]) * pw[wi];
                rgx[xi] += double(pgy[yi]) * pw[wi];
                rgw[wi] += double(pgy[yi]) * px[xi];
              }
          ry[yi] = acc;
        }
  auto compare = [](const char* what, const Tensor& t, const std::vector<double>& ref) {
    int bad = 0;
    for (int64_t i = 0; i < t.numel(); ++i) {
      if (std::fabs(t.data<float>()[i] - ref[i]) > 1e-4 * (1 + std::fabs(ref[i]))) {
        if (bad < 3) std::fprintf(stderr, "  %s[%lld] = %.7g, expected %.7g\n", what, (long long)i, t.data<float>()[i], ref[i]);
        ++bad;
      }
    }
    if (bad) std::fprintf(stderr, "%s: %d of %lld elements differ\n", what, bad, (long long)t.numel());
    CHECK(bad == 0);
  };
  compare("y", y, ry);
  compare("gx", grads[0], rgx);
  compare("gw", grads[1], rgw);
  compare("gb", grads[2], rgb);
}

void errors() {
  Tensor x = Tensor::zeros({8, 3, 28, 28}, DType::Float32);
  Tensor w = Tensor::zeros({16, 1, 5, 5}, DType::Float32);
  try {
    ops::conv2d_forward(x, w, Tensor(), {});
    CHECK(false);
  } catch (const Error& e) {
    const std::string m = e.what();
    CHECK(e.kind() == ErrorKind::InvalidArgument);
    CHECK(m.find("[8, 3, 28, 28]") != std::string::npos && m.find("[16, 1, 5, 5]") != std::string::npos);
  }
  Tensor small = Tensor::zeros({1, 1, 3, 3}, DType::Float32);
  try {
    ops::conv2d_forward(small, w, Tensor(), {});
    CHECK(false);
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find("smaller than") != std::string::npos);
  }
}

}  // namespace

int main() {
  hand_computed();
  std::mt19937 rng(7);
  // Every case twice: the direct AVX-512 kernels (where the CPU has them) and im2col + GEMM.
  for (bool direct_on : {true, false}) {
    cpu::direct::set_enabled(direct_on);
    against_direct({2, 1, 8, 8, 4, 5, 5, 1, 1, 2, 2}, rng);    // the net's first conv, small
    against_direct({3, 3, 7, 9, 5, 3, 3, 2, 2, 1, 1}, rng);    // stride 2, pad 1, odd sizes
    against_direct({2, 2, 6, 5, 3, 3, 2, 3, 1, 0, 1}, rng);    // unequal strides, kernel and padding
    against_direct({1, 4, 5, 5, 2, 5, 5, 1, 1, 0, 0}, rng);    // one output pixel
    // 800 x 10000 unfolded floats per image: two images per chunk, so chunks of 2 and 1 (both the
    // transposing and the direct path, and gW accumulated across chunks).
    against_direct({3, 32, 100, 100, 2, 5, 5, 1, 1, 2, 2}, rng);
    // The two-conv net's shapes (full 16- and 32-channel register tiles), then channel counts that
    // are not multiples of 16, rows wider than one tile, and padding larger than half the kernel.
    against_direct({3, 1, 28, 28, 16, 5, 5, 1, 1, 2, 2}, rng);
    against_direct({3, 16, 14, 14, 32, 5, 5, 1, 1, 2, 2}, rng);
    against_direct({2, 9, 9, 31, 48, 3, 3, 1, 1, 1, 1}, rng);
    against_direct({2, 17, 6, 40, 9, 3, 7, 1, 1, 0, 6}, rng);
    against_direct({1, 3, 5, 5, 20, 2, 2, 1, 1, 1, 0}, rng);  // C < 8: direct forward, GEMM backward
    against_direct({1, 8, 4, 4, 9, 3, 3, 1, 1, 3, 3}, rng);  // pad > R-1: direct forward, GEMM backward
    against_direct({1, 8, 9, 9, 9, 8, 8, 1, 1, 1, 1}, rng);  // S > 7: direct forward, GEMM backward
    against_direct({1, 8, 40, 40, 16, 5, 5, 1, 1, 2, 2}, rng);  // weight gradient in several row blocks
  }
  cpu::direct::set_enabled(true);
  errors();
  return test_failures();
}
