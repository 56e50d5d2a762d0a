// CPU kernels of the reduce family: sums over the trailing axis of a [rows, cols] view, max along
// a dimension, softmax and log_softmax and their backwards. Each output row or line is reduced by
// one thread in index order (sums in double), so the bits do not depend on the thread count.
#include <algorithm>
#include <cmath>

#include "ddp4j/dispatch.h"
#include "ddp4j/kernels.h"
#include "ddp4j/parallel.h"

namespace ddp4j::cpu {
namespace {

int64_t line_grain(int64_t length) { return std::max<int64_t>(1, kGrainSize / std::max<int64_t>(length, 1)); }

void sum_rows(const Tensor& x, int64_t rows, int64_t cols, double scale, Tensor& out) {
  const float* px = x.data<float>();
  float* po = out.data<float>();
  parallel_for(0, rows, line_grain(cols), [=](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const float* row = px + r * cols;
      double s = 0;
      for (int64_t c = 0; c < cols; ++c) s += row[c];
      po[r] = static_cast<float>(s * scale);
    }
  });
}

void max_dim(const Tensor& x, int64_t outer, int64_t size, int64_t inner, Tensor& values, Tensor& indices) {
  const float* px = x.data<float>();
  float* pv = values.data<float>();
  int64_t* pi = indices.data<int64_t>();
  parallel_for(0, outer * inner, line_grain(size), [=](int64_t l0, int64_t l1) {
    for (int64_t l = l0; l < l1; ++l) {
      const float* line = px + (l / inner) * size * inner + l % inner;
      int64_t best = 0;
      for (int64_t j = 1; j < size && !std::isnan(line[best * inner]); ++j) {
        const float v = line[j * inner];
        if (std::isnan(v) || v > line[best * inner]) best = j;
      }
      pv[l] = line[best * inner];
      pi[l] = best;
    }
  });
}

void softmax(const Tensor& x, int64_t outer, int64_t size, int64_t inner, bool log, Tensor& y) {
  const float* px = x.data<float>();
  float* py = y.data<float>();
  parallel_for(0, outer * inner, line_grain(size), [=](int64_t l0, int64_t l1) {
    for (int64_t l = l0; l < l1; ++l) {
      const int64_t base = (l / inner) * size * inner + l % inner;
      const float* in = px + base;
      float* out = py + base;
      float max = -INFINITY;
      for (int64_t j = 0; j < size; ++j) max = std::max(max, in[j * inner]);
      if (std::isinf(max) && max < 0) max = 0;  // a line of -inf (a fully masked row) gives NaN, as PyTorch
      double sum = 0;
      for (int64_t j = 0; j < size; ++j) sum += std::exp(static_cast<double>(in[j * inner] - max));
      if (log) {
        const float shift = max + static_cast<float>(std::log(sum));
        for (int64_t j = 0; j < size; ++j) out[j * inner] = in[j * inner] - shift;
      } else {
        const double inv = 1.0 / sum;
        for (int64_t j = 0; j < size; ++j) {
          out[j * inner] = static_cast<float>(std::exp(static_cast<double>(in[j * inner] - max)) * inv);
        }
      }
    }
  });
}

void softmax_backward(const Tensor& gy, const Tensor& y, int64_t outer, int64_t size, int64_t inner, bool log,
                      Tensor& gx) {
  const float* pg = gy.data<float>();
  const float* py = y.data<float>();
  float* px = gx.data<float>();
  parallel_for(0, outer * inner, line_grain(size), [=](int64_t l0, int64_t l1) {
    for (int64_t l = l0; l < l1; ++l) {
      const int64_t base = (l / inner) * size * inner + l % inner;
      const float* g = pg + base;
      const float* out = py + base;
      float* dx = px + base;
      double s = 0;
      for (int64_t j = 0; j < size; ++j) s += log ? g[j * inner] : static_cast<double>(g[j * inner]) * out[j * inner];
      const float sf = static_cast<float>(s);
      for (int64_t j = 0; j < size; ++j) {
        const int64_t k = j * inner;
        dx[k] = log ? g[k] - std::exp(out[k]) * sf : out[k] * (g[k] - sf);
      }
    }
  });
}

}  // namespace

DDP4J_REGISTER_KERNEL(sum_rows, CPU, sum_rows);
DDP4J_REGISTER_KERNEL(max_dim, CPU, max_dim);
DDP4J_REGISTER_KERNEL(softmax, CPU, softmax);
DDP4J_REGISTER_KERNEL(softmax_backward, CPU, softmax_backward);

}  // namespace ddp4j::cpu
