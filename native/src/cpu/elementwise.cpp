// CPU kernels for the elementwise ops and reductions. Plain loops: the compiler vectorises them.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "ddp4j/dispatch.h"
#include "ddp4j/kernels.h"

namespace ddp4j::cpu {
namespace {

void fill(Tensor& t, double value) {
  if (t.dtype() == DType::Float32) {
    std::fill_n(t.data<float>(), t.numel(), static_cast<float>(value));
  } else {
    std::fill_n(t.data<int64_t>(), t.numel(), static_cast<int64_t>(value));
  }
}

void copy(const Tensor& src, Tensor& dst) {
  if (src.raw_data() != dst.raw_data()) std::memcpy(dst.raw_data(), src.raw_data(), src.nbytes());
}

void add(const Tensor& a, const Tensor& b, float alpha, Tensor& out) {
  const float* pa = a.data<float>();
  const float* pb = b.data<float>();
  float* po = out.data<float>();
  const int64_t n = a.numel();
  for (int64_t i = 0; i < n; ++i) po[i] = pa[i] + alpha * pb[i];
}

void mul(const Tensor& a, const Tensor& b, Tensor& out) {
  const float* pa = a.data<float>();
  const float* pb = b.data<float>();
  float* po = out.data<float>();
  const int64_t n = a.numel();
  for (int64_t i = 0; i < n; ++i) po[i] = pa[i] * pb[i];
}

void scale(const Tensor& a, float s, Tensor& out) {
  const float* pa = a.data<float>();
  float* po = out.data<float>();
  const int64_t n = a.numel();
  for (int64_t i = 0; i < n; ++i) po[i] = pa[i] * s;
}

void sum(const Tensor& a, Tensor& out) {
  const float* pa = a.data<float>();
  double acc = 0;
  const int64_t n = a.numel();
  for (int64_t i = 0; i < n; ++i) acc += pa[i];
  *out.data<float>() = static_cast<float>(acc);
}

void argmax_rows(const Tensor& x, Tensor& out) {
  const int64_t rows = x.size(0), cols = x.size(1);
  const float* px = x.data<float>();
  int64_t* po = out.data<int64_t>();
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = px + r * cols;
    // First maximum, and NaN counts as the maximum (the first NaN wins), as torch.argmax.
    int64_t best = 0;
    for (int64_t c = 1; c < cols && !std::isnan(row[best]); ++c) {
      if (std::isnan(row[c]) || row[c] > row[best]) best = c;
    }
    po[r] = best;
  }
}

}  // namespace

DDP4J_REGISTER_KERNEL(fill, CPU, fill);
DDP4J_REGISTER_KERNEL(copy, CPU, copy);
DDP4J_REGISTER_KERNEL(add, CPU, add);
DDP4J_REGISTER_KERNEL(mul, CPU, mul);
DDP4J_REGISTER_KERNEL(scale, CPU, scale);
DDP4J_REGISTER_KERNEL(sum, CPU, sum);
DDP4J_REGISTER_KERNEL(argmax_rows, CPU, argmax_rows);

}  // namespace ddp4j::cpu
