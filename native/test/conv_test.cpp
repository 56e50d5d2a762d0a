// Conv2d kernels: a hand-computed one-channel example, then forward and all three gradients
// against a direct (seven-loop) convolution for several geometries, including chunked batches.
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "cpu/conv_direct.h"
#include "ddp4j/ops.h"
#include "ddp4j/parallel.h"
#include "tensor_util.h"
#include "test_util.h"

using namespace ddp4j;
using ddp4j::test::make;

namespace {

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
  int dh = 1, dw = 1, groups = 1;
};

kernels::Conv2dGeometry geometry_of(const Case& c) {
  kernels::Conv2dGeometry g;
  g.stride_h = c.sh;
  g.stride_w = c.sw;
  g.pad_h = c.ph;
  g.pad_w = c.pw;
  g.dilation_h = c.dh;
  g.dilation_w = c.dw;
  g.groups = c.groups;
  return g;
}

void against_direct(const Case& c, std::mt19937& rng) {
  const kernels::Conv2dGeometry g = geometry_of(c);
  const int64_t Cg = c.C / c.groups, Kg = c.K / c.groups;
  Tensor x = random_tensor({c.N, c.C, c.H, c.W}, rng);
  Tensor w = random_tensor({c.K, Cg, c.R, c.S}, rng);
  Tensor b = random_tensor({c.K}, rng);
  Tensor y = ops::conv2d_forward(x, w, b, g);
  const int64_t P = (c.H + 2 * c.ph - c.dh * (c.R - 1) - 1) / c.sh + 1;
  const int64_t Q = (c.W + 2 * c.pw - c.dw * (c.S - 1) - 1) / c.sw + 1;
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
          for (int64_t cl = 0; cl < Cg; ++cl)  // the input channels of k's group
            for (int64_t r = 0; r < c.R; ++r)
              for (int64_t s = 0; s < c.S; ++s) {
                const int64_t ch = k / Kg * Cg + cl;
                const int64_t h = p * c.sh - c.ph + r * c.dh, ww = q * c.sw - c.pw + s * c.dw;
                if (h < 0 || h >= c.H || ww < 0 || ww >= c.W) continue;
                const int64_t xi = ((n * c.C + ch) * c.H + h) * c.W + ww, wi = ((k * Cg + cl) * c.R + r) * c.S + s;
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

/** Same bits from 1, 2 and 3 threads (the kernels split work by the shapes, never by threads). */
void thread_count_independent(const Case& c, std::mt19937& rng) {
  const kernels::Conv2dGeometry g = geometry_of(c);
  Tensor x = random_tensor({c.N, c.C, c.H, c.W}, rng);
  Tensor w = random_tensor({c.K, c.C / c.groups, c.R, c.S}, rng);
  Tensor b = random_tensor({c.K}, rng);
  std::vector<std::vector<float>> runs;
  const int before = get_num_threads();
  for (int threads : {1, 2, 3}) {
    set_num_threads(threads);
    Tensor y = ops::conv2d_forward(x, w, b, g);
    Tensor gy = Tensor::empty(y.shape(), DType::Float32);
    for (int64_t i = 0; i < gy.numel(); ++i) gy.data<float>()[i] = std::sin(0.37f * static_cast<float>(i));
    auto grads = ops::conv2d_backward(gy, x, w, true, true, g);
    std::vector<float> all;
    for (const Tensor& t : {y, grads[0], grads[1], grads[2]}) all.insert(all.end(), t.data<float>(), t.data<float>() + t.numel());
    runs.push_back(all);
  }
  set_num_threads(before);
  for (size_t i = 1; i < runs.size(); ++i) {
    CHECK(runs[i].size() == runs[0].size());
    CHECK(std::memcmp(runs[i].data(), runs[0].data(), runs[0].size() * sizeof(float)) == 0);
  }
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
  // groups: C must be weight.size(1) * groups and K divisible by groups.
  kernels::Conv2dGeometry g2;
  g2.groups = 2;
  try {
    ops::conv2d_forward(Tensor::zeros({1, 6, 5, 5}, DType::Float32), Tensor::zeros({4, 2, 3, 3}, DType::Float32),
                        Tensor(), g2);
    CHECK(false);
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find("groups=2") != std::string::npos);
  }
  try {
    ops::conv2d_forward(Tensor::zeros({1, 4, 5, 5}, DType::Float32), Tensor::zeros({3, 2, 3, 3}, DType::Float32),
                        Tensor(), g2);
    CHECK(false);
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find("not divisible by groups=2") != std::string::npos);
  }
  // dilation 3 makes a 3x3 kernel span 7x7: a 5x5 input is too small.
  kernels::Conv2dGeometry g3;
  g3.dilation_h = g3.dilation_w = 3;
  try {
    ops::conv2d_forward(Tensor::zeros({1, 1, 5, 5}, DType::Float32), Tensor::zeros({1, 1, 3, 3}, DType::Float32),
                        Tensor(), g3);
    CHECK(false);
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find("7x7 window") != std::string::npos);
  }
  kernels::Conv2dGeometry g0;
  g0.groups = 0;
  try {
    ops::conv2d_forward(Tensor::zeros({1, 1, 5, 5}, DType::Float32), Tensor::zeros({1, 1, 3, 3}, DType::Float32),
                        Tensor(), g0);
    CHECK(false);
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find("groups must be positive") != std::string::npos);
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
    // Groups and dilation (GEMM path only): grouped, depthwise, dilated, all three with stride.
    against_direct({2, 4, 9, 8, 6, 3, 3, 1, 1, 1, 1, 1, 1, 2}, rng);
    against_direct({2, 6, 9, 9, 6, 3, 3, 1, 1, 1, 1, 1, 1, 6}, rng);
    against_direct({2, 3, 11, 10, 4, 3, 3, 1, 1, 2, 2, 2, 2, 1}, rng);
    against_direct({3, 4, 12, 11, 8, 3, 3, 2, 2, 2, 1, 2, 3, 4}, rng);
    // 1x1 stride 1 (the input is its own unfolding) and stride 2, per-image plan with row blocks.
    against_direct({2, 24, 17, 18, 20, 1, 1, 1, 1, 0, 0}, rng);
    against_direct({3, 8, 33, 34, 12, 1, 1, 2, 2, 0, 0}, rng);
    against_direct({2, 4, 40, 40, 6, 3, 3, 1, 1, 1, 1, 1, 1, 2}, rng);  // several row blocks, 2 groups
    // Batched forward and gradients (outputs under 128 pixels): several batch chunks and output
    // blocks, groups and 1x1.
    against_direct({5, 16, 6, 6, 136, 3, 3, 1, 1, 1, 1}, rng);
    against_direct({4, 12, 7, 7, 8, 1, 1, 1, 1, 0, 0, 1, 1, 4}, rng);
    against_direct({3, 300, 4, 4, 140, 3, 3, 2, 2, 1, 1}, rng);
    // Every conv shape of ResNet-50 on 4 x 3 x 64 x 64 (ResNetGoldenTest's model).
    against_direct({4, 3, 64, 64, 64, 7, 7, 2, 2, 3, 3}, rng);
    against_direct({4, 64, 16, 16, 256, 1, 1, 1, 1, 0, 0}, rng);
    against_direct({4, 256, 16, 16, 64, 1, 1, 1, 1, 0, 0}, rng);
    against_direct({4, 64, 16, 16, 64, 3, 3, 1, 1, 1, 1}, rng);
    against_direct({4, 128, 16, 16, 128, 3, 3, 2, 2, 1, 1}, rng);
    against_direct({4, 256, 16, 16, 512, 1, 1, 2, 2, 0, 0}, rng);
    against_direct({4, 512, 8, 8, 128, 1, 1, 1, 1, 0, 0}, rng);
    against_direct({4, 128, 8, 8, 128, 3, 3, 1, 1, 1, 1}, rng);
    against_direct({4, 256, 8, 8, 256, 3, 3, 2, 2, 1, 1}, rng);
    against_direct({4, 1024, 4, 4, 256, 1, 1, 1, 1, 0, 0}, rng);
    against_direct({4, 256, 4, 4, 256, 3, 3, 1, 1, 1, 1}, rng);
    against_direct({4, 512, 2, 2, 512, 3, 3, 1, 1, 1, 1}, rng);
    against_direct({4, 2048, 2, 2, 512, 1, 1, 1, 1, 0, 0}, rng);
    against_direct({4, 512, 8, 8, 1024, 1, 1, 2, 2, 0, 0}, rng);
    against_direct({4, 256, 4, 4, 1024, 1, 1, 1, 1, 0, 0}, rng);
    against_direct({4, 512, 8, 8, 256, 1, 1, 1, 1, 0, 0}, rng);
    against_direct({4, 1024, 4, 4, 2048, 1, 1, 2, 2, 0, 0}, rng);
    against_direct({4, 512, 4, 4, 512, 3, 3, 2, 2, 1, 1}, rng);
    // 12x12 outputs: input gradient per image, weight gradient batched.
    against_direct({3, 8, 12, 12, 16, 3, 3, 1, 1, 1, 1, 1, 1, 2}, rng);
  }
  cpu::direct::set_enabled(true);
  // GEMM path: per-image plan (forward row blocks, backward weight chunks), pointwise, batched
  // plan; then the direct kernels.
  cpu::direct::set_enabled(false);
  thread_count_independent({7, 8, 40, 40, 16, 3, 3, 2, 2, 1, 1}, rng);
  thread_count_independent({5, 64, 20, 20, 32, 1, 1, 1, 1, 0, 0}, rng);
  thread_count_independent({9, 32, 7, 7, 48, 3, 3, 1, 1, 1, 1, 1, 1, 2}, rng);
  thread_count_independent({5, 24, 12, 12, 40, 3, 3, 1, 1, 1, 1}, rng);
  cpu::direct::set_enabled(true);
  thread_count_independent({6, 16, 14, 14, 32, 5, 5, 1, 1, 2, 2}, rng);
  errors();
  return test_failures();
}
