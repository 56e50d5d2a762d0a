// MaxPool2d kernels: indices and values on a hand-computed example, the vectorised 2x2 and
// 3x3/2 paths (scalar, AVX2 and AVX-512, each that this CPU runs) against plain loops, padding
// as -inf, and the scatter-add backward with overlapping windows.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <limits>
#include <vector>

#include "cpu/max_pool.h"
#include "ddp4j/ops.h"
#include "tensor_util.h"
#include "test_util.h"

using namespace ddp4j;
using ddp4j::test::make;

int main() {
  // 4x4 input, 2x2 windows, stride 2.
  Tensor x = make({1, 1, 4, 4}, {1, 5, 2, 0,  //
                                 3, 4, 8, 7,  //
                                 -1, -2, -3, -4,  //
                                 -6, -5, 9, 9});
  kernels::Pool2dGeometry g;  // defaults: 2x2, stride 2, no padding
  auto out = ops::max_pool2d_forward(x, g);
  CHECK(out[0].shape() == (Shape{1, 1, 2, 2}));
  CHECK(out[1].dtype() == DType::Int64);
  const float y[] = {5, 8, -1, 9};
  const int64_t idx[] = {1, 6, 8, 14};  // ties (9, 9): the first wins
  for (int i = 0; i < 4; ++i) {
    CHECK_NEAR(out[0].data<float>()[i], y[i], 0);
    CHECK(out[1].data<int64_t>()[i] == idx[i]);
  }

  // The vectorised paths (every one this CPU can run) against plain loops.
  const cpu::PoolPath widest = cpu::pool_path();
  for (cpu::PoolPath path : {cpu::PoolPath::Scalar, cpu::PoolPath::Avx2, cpu::PoolPath::Avx512}) {
    if (!cpu::pool_path_supported(path)) continue;
    cpu::set_pool_path(path);
    // The 2x2 fast path (vectorised on the AVX-512 path) against a plain loop: odd sizes,
    // rows of more than 16 windows, many ties (small integers) and NaNs.
    {
      const int64_t C = 3, H = 7, W = 37, P = H / 2, Q = W / 2;
      std::vector<float> v(static_cast<size_t>(2 * C * H * W));
      for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>((i * 7919) % 5);
      for (size_t i = 3; i < v.size(); i += 41) v[i] = std::numeric_limits<float>::quiet_NaN();
      auto o = ops::max_pool2d_forward(make({2, C, H, W}, v), g);
      int bad = 0;
      for (int64_t plane = 0; plane < 2 * C; ++plane) {
        for (int64_t p = 0; p < P; ++p) {
          for (int64_t q = 0; q < Q; ++q) {
            const float* in = v.data() + plane * H * W;
            int64_t bi = 2 * p * W + 2 * q;
            for (int64_t c : {bi + 1, bi + W, bi + W + 1}) {
              if (in[c] > in[bi] || in[c] != in[c]) bi = c;
            }
            const int64_t j = (plane * P + p) * Q + q;
            const float got = o[0].data<float>()[j];
            const bool same = (got == in[bi]) || (got != got && in[bi] != in[bi]);
            if (!same || o[1].data<int64_t>()[j] != bi) ++bad;
          }
        }
      }
      CHECK(bad == 0);
    }

    // The stem's 3x3 / stride 2 / padding 1 (vectorised inside the plane on the AVX2 and AVX-512 paths)
    // against a plain loop with PyTorch's rule (first maximum wins, NaN propagates, padding is
    // -inf), on widths around the vector blocks' edges, ties, NaNs and -inf.
    for (int64_t W : {7, 33, 34, 35, 36, 50, 67, 112}) {
      const int64_t C = 2, H = 9, P = (H + 2 - 3) / 2 + 1, Q = (W + 2 - 3) / 2 + 1;
      std::vector<float> v(static_cast<size_t>(C * H * W));
      for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>((i * 7919) % 7) - 3;
      for (size_t i = 5; i < v.size(); i += 53) v[i] = std::numeric_limits<float>::quiet_NaN();
      for (size_t i = 11; i < v.size(); i += 29) v[i] = -std::numeric_limits<float>::infinity();
      kernels::Pool2dGeometry s3;
      s3.kernel_h = s3.kernel_w = 3;
      s3.stride_h = s3.stride_w = 2;
      s3.pad_h = s3.pad_w = 1;
      auto o = ops::max_pool2d_forward(make({1, C, H, W}, v), s3);
      CHECK(o[0].shape() == (Shape{1, C, P, Q}));
      int bad = 0;
      for (int64_t plane = 0; plane < C; ++plane) {
        const float* in = v.data() + plane * H * W;
        for (int64_t p = 0; p < P; ++p) {
          for (int64_t q = 0; q < Q; ++q) {
            float best = -std::numeric_limits<float>::infinity();
            int64_t bi = std::max<int64_t>(2 * p - 1, 0) * W + std::max<int64_t>(2 * q - 1, 0);
            for (int64_t h = std::max<int64_t>(2 * p - 1, 0); h <= std::min(2 * p + 1, H - 1); ++h) {
              for (int64_t w = std::max<int64_t>(2 * q - 1, 0); w <= std::min(2 * q + 1, W - 1); ++w) {
                if (in[h * W + w] > best || in[h * W + w] != in[h * W + w]) {
                  best = in[h * W + w];
                  bi = h * W + w;
                }
              }
            }
            const int64_t j = (plane * P + p) * Q + q;
            const float got = o[0].data<float>()[j];
            const bool same = (got == best) || (got != got && best != best);
            if (!same || o[1].data<int64_t>()[j] != bi) ++bad;
          }
        }
      }
      if (bad != 0) {
        std::fprintf(stderr, "3x3/2 pool, path %d, width %ld: %d windows differ\n", static_cast<int>(path),
                     static_cast<long>(W), bad);
      }
      CHECK(bad == 0);
    }
  }
  cpu::set_pool_path(widest);

  // All-negative input with padding 1, 3x3 windows, stride 2: padding must not win (it is -inf).
  Tensor neg = make({1, 1, 3, 3}, {-9, -8, -7, -6, -5, -4, -3, -2, -1});
  kernels::Pool2dGeometry g3;
  g3.kernel_h = g3.kernel_w = 3;
  g3.stride_h = g3.stride_w = 2;
  g3.pad_h = g3.pad_w = 1;
  auto out3 = ops::max_pool2d_forward(neg, g3);
  CHECK(out3[0].shape() == (Shape{1, 1, 2, 2}));
  const float y3[] = {-5, -4, -2, -1};
  const int64_t idx3[] = {4, 5, 7, 8};
  for (int i = 0; i < 4; ++i) {
    CHECK_NEAR(out3[0].data<float>()[i], y3[i], 0);
    CHECK(out3[1].data<int64_t>()[i] == idx3[i]);
  }

  // Backward: all four overlapping windows contain x[1][1] (index 4), the maximum, so the
  // gradients add up there.
  Tensor ones = make({1, 1, 2, 2}, {1, 2, 3, 4});
  Tensor up = make({1, 1, 3, 3}, {0, 0, 0, 0, 10, 0, 0, 0, 0});
  auto outu = ops::max_pool2d_forward(up, g3);
  Tensor gx = ops::max_pool2d_backward(ones, outu[1], up.shape());
  CHECK_NEAR(gx.data<float>()[4], 1 + 2 + 3 + 4, 0);
  double total = 0;
  for (int i = 0; i < 9; ++i) total += gx.data<float>()[i];
  CHECK_NEAR(total, 10, 0);

  // Too small for the kernel; bad indices are refused rather than written out of bounds.
  try {
    kernels::Pool2dGeometry g5;
    g5.kernel_h = g5.kernel_w = 5;
    ops::max_pool2d_forward(neg, g5);
    CHECK(false);
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::InvalidArgument);
  }
  Tensor bad = Tensor::zeros({1, 1, 2, 2}, DType::Int64);
  bad.data<int64_t>()[3] = 99;
  try {
    ops::max_pool2d_backward(ones, bad, up.shape());
    CHECK(false);
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::InvalidArgument);
  }
  return test_failures();
}
