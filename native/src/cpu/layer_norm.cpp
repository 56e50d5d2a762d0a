// CPU layer norm: one pass per row forward (mean and variance in double, then the affine map), one
// pass per row backward for dx. The parameter gradients sum over rows: each fixed block of rows
// (its size depends only on the shape) sums into its own partial row, and the partials are added
// in block order, so the bits do not depend on the thread count.
#include <algorithm>
#include <cmath>
#include <vector>

#include "ddp4j/dispatch.h"
#include "ddp4j/parallel.h"
#include "ddp4j/transformer_kernels.h"

namespace ddp4j::cpu {
namespace {

/** Rows of d elements that make about kGrainSize elements: the unit of work and of the row sums. */
int64_t rows_per_block(int64_t d) { return std::max<int64_t>(1, kGrainSize / std::max<int64_t>(d, 1)); }

void layer_norm_forward(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps, Tensor& y,
                        Tensor& mean, Tensor& rstd) {
  const int64_t d = x.size(-1), rows = d == 0 ? 0 : x.numel() / d;
  const float* px = x.data<float>();
  const float* pw = weight.defined() ? weight.data<float>() : nullptr;
  const float* pb = bias.defined() ? bias.data<float>() : nullptr;
  float* py = y.data<float>();
  float* pm = mean.data<float>();
  float* pr = rstd.data<float>();
  parallel_for(0, rows, rows_per_block(d), [=](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const float* xr = px + r * d;
      double sum = 0;
      for (int64_t c = 0; c < d; ++c) sum += xr[c];
      const double mu = sum / static_cast<double>(d);
      double sq = 0;  // two passes: a mean large against the spread costs no precision
      for (int64_t c = 0; c < d; ++c) {
        const double dev = xr[c] - mu;
        sq += dev * dev;
      }
      const float m = static_cast<float>(mu);
      const float rs = static_cast<float>(1.0 / std::sqrt(sq / static_cast<double>(d) + eps));
      pm[r] = m;
      pr[r] = rs;
      float* yr = py + r * d;
      for (int64_t c = 0; c < d; ++c) {
        float v = (xr[c] - m) * rs;
        if (pw != nullptr) v *= pw[c];
        if (pb != nullptr) v += pb[c];
        yr[c] = v;
      }
    }
  });
}

void layer_norm_backward(const Tensor& gy, const Tensor& x, const Tensor& mean, const Tensor& rstd,
                         const Tensor& weight, Tensor& dx, Tensor& dweight, Tensor& dbias) {
  const int64_t d = x.size(-1), rows = d == 0 ? 0 : x.numel() / d;
  const float* pg = gy.data<float>();
  const float* px = x.data<float>();
  const float* pm = mean.data<float>();
  const float* pr = rstd.data<float>();
  const float* pw = weight.defined() ? weight.data<float>() : nullptr;
  float* pdx = dx.data<float>();
  const bool want_dw = dweight.defined(), want_db = dbias.defined();
  const int64_t block = rows_per_block(d);
  const int64_t blocks = (rows + block - 1) / block;
  // Per block of rows: partial sums of gy * xhat (dweight) and gy (dbias), in double.
  std::vector<double> partial(want_dw || want_db ? static_cast<size_t>(blocks * 2 * d) : 0, 0.0);
  double* pp = partial.data();
  parallel_for(0, blocks, 1, [=](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      double* pdw = pp == nullptr ? nullptr : pp + b * 2 * d;
      double* pdb = pdw == nullptr ? nullptr : pdw + d;
      for (int64_t r = b * block; r < std::min(rows, (b + 1) * block); ++r) {
        const float* g = pg + r * d;
        const float* xr = px + r * d;
        const float m = pm[r], rs = pr[r];
        // dx = rstd * (g' - mean(g') - xhat * mean(g' * xhat)), g' = gy * weight.
        double sum_g = 0, sum_gx = 0;
        for (int64_t c = 0; c < d; ++c) {
          const float xhat = (xr[c] - m) * rs;
          const float gw = pw != nullptr ? g[c] * pw[c] : g[c];
          sum_g += gw;
          sum_gx += static_cast<double>(gw) * xhat;
          if (pdw != nullptr) {
            pdw[c] += static_cast<double>(g[c]) * xhat;
            pdb[c] += g[c];
          }
        }
        const float mean_g = static_cast<float>(sum_g / static_cast<double>(d));
        const float mean_gx = static_cast<float>(sum_gx / static_cast<double>(d));
        float* out = pdx + r * d;
        for (int64_t c = 0; c < d; ++c) {
          const float xhat = (xr[c] - m) * rs;
          const float gw = pw != nullptr ? g[c] * pw[c] : g[c];
          out[c] = rs * (gw - mean_g - xhat * mean_gx);
        }
      }
    }
  });
  if (!want_dw && !want_db) return;
  float* pdw_out = want_dw ? dweight.data<float>() : nullptr;
  float* pdb_out = want_db ? dbias.data<float>() : nullptr;
  parallel_for(0, d, std::max<int64_t>(1, kGrainSize / std::max<int64_t>(blocks, 1)), [=](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      double sw = 0, sb = 0;
      for (int64_t b = 0; b < blocks; ++b) {  // block order: the same bits for any thread count
        sw += pp[b * 2 * d + c];
        sb += pp[b * 2 * d + d + c];
      }
      if (pdw_out != nullptr) pdw_out[c] = static_cast<float>(sw);
      if (pdb_out != nullptr) pdb_out[c] = static_cast<float>(sb);
    }
  });
}

}  // namespace

DDP4J_REGISTER_KERNEL(layer_norm_forward, CPU, layer_norm_forward);
DDP4J_REGISTER_KERNEL(layer_norm_backward, CPU, layer_norm_backward);

}  // namespace ddp4j::cpu
