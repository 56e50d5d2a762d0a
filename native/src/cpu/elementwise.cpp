// CPU kernels for the elementwise ops and reductions. Plain loops (the compiler vectorises them),
// split among the intra-op threads when a tensor holds more than two grains (kGrainSize).
#include <algorithm>
#include <cmath>
#include <cstring>

#include "ddp4j/dispatch.h"
#include "ddp4j/half.h"
#include "ddp4j/kernels.h"
#include "ddp4j/parallel.h"

namespace ddp4j::cpu {
namespace {

void fill(Tensor& t, double value) {
  const int64_t n = t.numel();
  if (t.dtype() == DType::Float32) {
    float* p = t.data<float>();
    const float v = static_cast<float>(value);
    parallel_for(0, n, kGrainSize, [=](int64_t b, int64_t e) { std::fill(p + b, p + e, v); });
  } else if (is_reduced_float(t.dtype())) {
    // As torch.full: the value rounds to float32 first, then to the 16-bit type.
    uint16_t* p = t.data<uint16_t>();
    const float f = static_cast<float>(value);
    const uint16_t v = t.dtype() == DType::BFloat16 ? float_to_bfloat16(f) : float_to_float16(f);
    parallel_for(0, n, kGrainSize, [=](int64_t b, int64_t e) { std::fill(p + b, p + e, v); });
  } else if (t.dtype() == DType::Bool) {
    // As torch.full(..., dtype=torch.bool): any non-zero value is true.
    uint8_t* p = t.data<uint8_t>();
    const uint8_t v = value != 0 ? 1 : 0;
    parallel_for(0, n, kGrainSize, [=](int64_t b, int64_t e) { std::fill(p + b, p + e, v); });
  } else {
    int64_t* p = t.data<int64_t>();
    const int64_t v = static_cast<int64_t>(value);
    parallel_for(0, n, kGrainSize, [=](int64_t b, int64_t e) { std::fill(p + b, p + e, v); });
  }
}

void copy(const Tensor& src, Tensor& dst) {
  if (src.raw_data() == dst.raw_data()) return;
  const char* from = static_cast<const char*>(src.raw_data());
  char* to = static_cast<char*>(dst.raw_data());
  const int64_t bytes = static_cast<int64_t>(src.nbytes());
  parallel_for(0, bytes, kGrainSize * 4, [&](int64_t b, int64_t e) {
    std::memcpy(to + b, from + b, static_cast<size_t>(e - b));
  });
}

void add(const Tensor& a, const Tensor& b, float alpha, Tensor& out) {
  const float* pa = a.data<float>();
  const float* pb = b.data<float>();
  float* po = out.data<float>();
  parallel_for(0, a.numel(), kGrainSize, [=](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) po[i] = pa[i] + alpha * pb[i];
  });
}

void mul(const Tensor& a, const Tensor& b, Tensor& out) {
  const float* pa = a.data<float>();
  const float* pb = b.data<float>();
  float* po = out.data<float>();
  parallel_for(0, a.numel(), kGrainSize, [=](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) po[i] = pa[i] * pb[i];
  });
}

void scale(const Tensor& a, float s, Tensor& out) {
  const float* pa = a.data<float>();
  float* po = out.data<float>();
  parallel_for(0, a.numel(), kGrainSize, [=](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) po[i] = pa[i] * s;
  });
}

void sum(const Tensor& a, Tensor& out) {
  const float* pa = a.data<float>();
  // Blocks of kGrainSize elements, each added in double in index order, then the blocks in
  // order: the same sum for any thread count (and today's serial sum up to kGrainSize elements).
  const double acc = parallel_reduce_blocks(0, a.numel(), kGrainSize, [&](int64_t lo, int64_t hi) {
    double s = 0;
    for (int64_t i = lo; i < hi; ++i) s += pa[i];
    return s;
  });
  *out.data<float>() = static_cast<float>(acc);
}

void argmax_rows(const Tensor& x, Tensor& out) {
  const int64_t rows = x.size(0), cols = x.size(1);
  const float* px = x.data<float>();
  int64_t* po = out.data<int64_t>();
  parallel_for(0, rows, std::max<int64_t>(1, kGrainSize / std::max<int64_t>(cols, 1)), [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) {
      const float* row = px + r * cols;
      // First maximum, and NaN counts as the maximum (the first NaN wins), as torch.argmax.
      int64_t best = 0;
      for (int64_t c = 1; c < cols && !std::isnan(row[best]); ++c) {
        if (std::isnan(row[c]) || row[c] > row[best]) best = c;
      }
      po[r] = best;
    }
  });
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
