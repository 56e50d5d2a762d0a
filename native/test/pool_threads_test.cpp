// Pooling kernels (max, average, adaptive average; forward and backward) give bit-identical
// results for any intra-op thread count, and pool2d_output_size follows PyTorch's rule.
#include <cstring>
#include <vector>

#include "ddp4j/ops.h"
#include "ddp4j/parallel.h"
#include "test_util.h"

using namespace ddp4j;

namespace {
Tensor data(const Shape& shape, uint64_t seed) {
  Tensor t = Tensor::empty(shape, DType::Float32);
  for (int64_t i = 0; i < t.numel(); ++i) {
    t.data<float>()[i] = static_cast<float>(test::mix(seed * 1000003 + i) % 2001) / 1000.f - 1.f;
  }
  return t;
}

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && a.nbytes() == b.nbytes() && std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0;
}

/** Every pooling op's outputs on many planes (so a parallel_for has work to split). */
std::vector<Tensor> run_all() {
  const Shape shape{4, 24, 15, 13};
  Tensor x = data(shape, 1);
  std::vector<Tensor> out;
  kernels::Pool2dGeometry max_g{3, 3, 2, 2, 1, 1, 2, 2, true};
  auto m = ops::max_pool2d_forward(x, max_g);
  out.push_back(m[0]);
  out.push_back(m[1]);
  out.push_back(ops::max_pool2d_backward(data(m[0].shape(), 2), m[1], shape));
  kernels::Pool2dGeometry fast{};  // 2x2 stride 2: the fast path
  auto f = ops::max_pool2d_forward(x, fast);
  out.push_back(f[0]);
  out.push_back(ops::max_pool2d_backward(data(f[0].shape(), 3), f[1], shape));
  kernels::Pool2dGeometry avg_g{3, 3, 2, 2, 1, 1, 1, 1, true};
  Tensor a = ops::avg_pool2d_forward(x, avg_g, false, 0);
  out.push_back(a);
  out.push_back(ops::avg_pool2d_backward(data(a.shape(), 4), shape, avg_g, false, 0));
  Tensor ad = ops::adaptive_avg_pool2d_forward(x, 4, 5);
  out.push_back(ad);
  out.push_back(ops::adaptive_avg_pool2d_backward(data(ad.shape(), 5), shape));
  return out;
}
}  // namespace

int main() {
  set_num_threads(1);
  const std::vector<Tensor> serial = run_all();
  for (int threads : {2, 3, 7}) {
    set_num_threads(threads);
    const std::vector<Tensor> parallel = run_all();
    for (size_t i = 0; i < serial.size(); ++i) {
      if (!same_bits(serial[i], parallel[i])) {
        std::fprintf(stderr, "output %zu differs with %d threads\n", i, threads);
        CHECK(false);
      }
    }
  }
  set_num_threads(1);

  // PyTorch's pooling_output_shape: floor, ceil, and ceil's "last window starts inside" rule.
  CHECK(ops::pool2d_output_size(9, 2, 2, 0, 1, false) == 4);
  CHECK(ops::pool2d_output_size(9, 2, 2, 0, 1, true) == 5);
  CHECK(ops::pool2d_output_size(5, 2, 2, 1, 1, true) == 3);  // a 4th window would start in the right padding
  CHECK(ops::pool2d_output_size(8, 3, 3, 1, 1, true) == 3);
  CHECK(ops::pool2d_output_size(9, 3, 2, 1, 2, true) == 4);  // dilation 2: effective window 5
  CHECK(ops::pool2d_output_size(112, 3, 2, 1, 1, false) == 56);  // ResNet's stem pool
  return test_failures();
}
