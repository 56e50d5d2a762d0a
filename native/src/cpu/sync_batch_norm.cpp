// CPU SyncBatchNorm kernels (kernels.h: sync_batch_norm_*), the local halves of
// torch.nn.SyncBatchNorm's passes; the collectives between them run in Java on the process group.
// The statistics and gradient sums use batch_norm.cpp's plane loops (batch_norm_sums.h): per-channel sums in float32 lanes
// added in double, shifted by the channel's first value so E[v²] - E[v]² does not cancel. Threads
// split the sums by channel (each channel's planes added by one thread in image order) and the
// element-wise passes by plane, so results do not depend on the thread count.
#include <cmath>
#include <vector>

#ifndef __AVX2__
#error "sync_batch_norm.cpp needs AVX2 and FMA (x86-64 Haswell or later; CMake passes -mavx2 -mfma)"
#endif

#include "batch_norm_sums.h"
#include "ddp4j/dispatch.h"
#include "ddp4j/kernels.h"
#include "ddp4j/parallel.h"

namespace ddp4j::cpu {
namespace {

using namespace bn;

/** x as [N, C, S]: S is the product of the sizes after the channel dimension (1 for [N, C]). */
struct Layout {
  int64_t N, C, S;
  explicit Layout(const Tensor& x) : N(x.size(0)), C(x.size(1)), S(1) {
    for (int d = 2; d < x.dim(); ++d) S *= x.size(d);
  }
};

constexpr double kTwo24 = 16777216.0;

void stats(const Tensor& x, Tensor& out) {
  const Layout l(x);
  const int64_t count = l.N * l.S;
  float* o = out.data<float>();
  o[0] = static_cast<float>(std::floor(count / kTwo24));
  o[1] = static_cast<float>(count - static_cast<double>(o[0]) * kTwo24);
  float* mean_hi = o + 2;
  float* mean_lo = mean_hi + l.C;
  float* m2 = mean_lo + l.C;
  if (count == 0) {
    for (int64_t c = 0; c < 3 * l.C; ++c) mean_hi[c] = 0;
    return;
  }
  const float* px = x.data<float>();
  std::vector<double> sum1(static_cast<size_t>(l.C), 0.0), sum2(static_cast<size_t>(l.C), 0.0);
  parallel_for(0, l.C, channel_grain(l.N, l.S), [&](int64_t c0, int64_t c1) {
    // Image by image over the range's channels: memory order (short strided runs per channel
    // defeat the prefetcher on small planes), each channel's planes still added in image order.
    for (int64_t n = 0; n < l.N; ++n) {
      for (int64_t c = c0; c < c1; ++c) shifted_sums(px + (n * l.C + c) * l.S, l.S, px[c * l.S], sum1[c], sum2[c]);
    }
    for (int64_t c = c0; c < c1; ++c) {
      const float k = px[c * l.S];
      const double s1 = sum1[c], s2 = sum2[c];
      const double d_mean = s1 / count;
      const double mean = k + d_mean;
      mean_hi[c] = static_cast<float>(mean);
      mean_lo[c] = static_cast<float>(mean - mean_hi[c]);
      m2[c] = static_cast<float>(std::max(0.0, s2 - s1 * d_mean));
    }
  });
}

void gather_stats(const Tensor& gathered, Tensor& running_mean, Tensor& running_var, double momentum, double eps,
                  Tensor& save_mean, Tensor& save_mean_lo, Tensor& save_invstd) {
  const int64_t W = gathered.size(0), row = gathered.size(1), C = save_mean.size(0);
  const float* g = gathered.data<float>();
  float* rm = running_mean.defined() ? running_mean.data<float>() : nullptr;
  float* rv = running_var.defined() ? running_var.data<float>() : nullptr;
  float* sm = save_mean.data<float>();
  float* sl = save_mean_lo.data<float>();
  float* si = save_invstd.data<float>();
  std::vector<double> n(static_cast<size_t>(W));
  double total = 0;
  for (int64_t r = 0; r < W; ++r) {
    n[r] = static_cast<double>(g[r * row]) * kTwo24 + g[r * row + 1];
    total += n[r];
  }
  for (int64_t c = 0; c < C; ++c) {
    // Chan et al.: mean = Σ n_r mean_r / n, m2 = Σ m2_r + Σ n_r (mean_r - mean)².
    double mean = 0;
    for (int64_t r = 0; r < W; ++r) {
      const float* p = g + r * row + 2;
      mean += n[r] * (static_cast<double>(p[c]) + p[C + c]);
    }
    mean /= total;
    double m2 = 0;
    for (int64_t r = 0; r < W; ++r) {
      if (n[r] == 0) continue;
      const float* p = g + r * row + 2;
      const double d = (static_cast<double>(p[c]) + p[C + c]) - mean;
      m2 += p[2 * C + c] + n[r] * d * d;
    }
    const double var = m2 / total;  // biased: used to normalise
    sm[c] = static_cast<float>(mean);
    sl[c] = static_cast<float>(mean - sm[c]);
    si[c] = static_cast<float>(1.0 / std::sqrt(var + eps));
    if (rm != nullptr) {
      // Running statistics use the unbiased variance, as torch.nn.SyncBatchNorm.
      rm[c] = static_cast<float>((1 - momentum) * rm[c] + momentum * mean);
      rv[c] = static_cast<float>((1 - momentum) * rv[c] + momentum * (m2 / (total - 1)));
    }
  }
}

/** One plane of elemt: ((x - m) - lo) * a + b, then with Relu + r (Residual) and max(., 0) keeping NaN. */
template <bool Relu, bool Residual>
void elemt_plane(const float* xp, const float* rp, float* out, int64_t n, float m, float lo, float a, float b) {
  for (int64_t j = 0; j < n; ++j) {
    float v = ((xp[j] - m) - lo) * a + b;
    if constexpr (Residual) v = v + rp[j];
    if constexpr (Relu) v = v <= 0.0f ? 0.0f : v;  // relu_forward: NaN stays
    out[j] = v;
  }
}

void elemt(const Tensor& x, const Tensor& mean, const Tensor& mean_lo, const Tensor& invstd, const Tensor& gamma,
           const Tensor& beta, const Tensor& residual, bool relu, Tensor& y) {
  const Layout l(x);
  if (l.N * l.S == 0) return;
  std::vector<float> a(static_cast<size_t>(l.C));
  for (int64_t c = 0; c < l.C; ++c) {
    a[c] = static_cast<float>(static_cast<double>(gamma.data<float>()[c]) * invstd.data<float>()[c]);
  }
  const float* px = x.data<float>();
  const float* pr = residual.defined() ? residual.data<float>() : nullptr;
  const float* pm = mean.data<float>();
  const float* pl = mean_lo.data<float>();
  const float* pb = beta.data<float>();
  float* py = y.data<float>();
  parallel_for(0, l.N * l.C, plane_grain(l.S), [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      // x - mean first (exact when x is near the mean), then the mean's low part: no cancellation
      // of x * a against beta - mean * a when the mean is large against the spread.
      const int64_t c = p % l.C, off = p * l.S;
      if (!relu) {
        elemt_plane<false, false>(px + off, nullptr, py + off, l.S, pm[c], pl[c], a[c], pb[c]);
      } else if (pr == nullptr) {
        elemt_plane<true, false>(px + off, nullptr, py + off, l.S, pm[c], pl[c], a[c], pb[c]);
      } else {
        elemt_plane<true, true>(px + off, pr + off, py + off, l.S, pm[c], pl[c], a[c], pb[c]);
      }
    }
  });
}

void backward_reduce(const Tensor& gy, const Tensor& x, const Tensor& mean, const Tensor& mean_lo,
                     const Tensor& invstd, Tensor& sums, Tensor& ggamma, Tensor& gbeta) {
  const Layout l(x);
  const float* px = x.data<float>();
  const float* pgy = gy.data<float>();
  const float* pm = mean.data<float>();
  const float* pl = mean_lo.data<float>();
  const float* pi = invstd.data<float>();
  float* ps = sums.data<float>();
  float* pgg = ggamma.data<float>();
  float* pgb = gbeta.data<float>();
  std::vector<double> sum_g(static_cast<size_t>(l.C), 0.0), sum_xg(static_cast<size_t>(l.C), 0.0);
  parallel_for(0, l.C, channel_grain(l.N, l.S), [&](int64_t c0, int64_t c1) {
    for (int64_t n = 0; n < l.N; ++n) {  // memory order, as stats
      for (int64_t c = c0; c < c1; ++c) {
        const int64_t off = (n * l.C + c) * l.S;
        grad_sums<false>(pgy + off, nullptr, px + off, l.S, pm[c], sum_g[c], sum_xg[c], nullptr);
      }
    }
    for (int64_t c = c0; c < c1; ++c) {
      const double sg = sum_g[c];
      const double sxg = sum_xg[c] - pl[c] * sg;  // Σ gy (x - mean - mean_lo)
      ps[c] = static_cast<float>(sg);
      ps[l.C + c] = static_cast<float>(sxg);
      pgb[c] = static_cast<float>(sg);
      pgg[c] = static_cast<float>(sxg * pi[c]);
    }
  });
}

void backward_elemt(const Tensor& gy, const Tensor& x, const Tensor& mean, const Tensor& mean_lo,
                    const Tensor& invstd, const Tensor& gamma, const Tensor& sums, int64_t count, Tensor& gx) {
  const Layout l(x);
  if (l.N * l.S == 0) return;
  const float* ps = sums.data<float>();
  const float* pm = mean.data<float>();
  const float* pl = mean_lo.data<float>();
  std::vector<float> a(static_cast<size_t>(l.C)), b(static_cast<size_t>(l.C)), d(static_cast<size_t>(l.C));
  for (int64_t c = 0; c < l.C; ++c) {
    // gx = gy * a + (x - mean) * b + d, as batch_norm.cpp's backward with the group's sums and count.
    const double is = invstd.data<float>()[c];
    const double scale = gamma.data<float>()[c] * is;
    const double k = ps[l.C + c] * is * is / count;
    a[c] = static_cast<float>(scale);
    b[c] = static_cast<float>(-scale * k);
    d[c] = static_cast<float>(-scale * (ps[c] / static_cast<double>(count)));
  }
  const float* px = x.data<float>();
  const float* pgy = gy.data<float>();
  float* pgx = gx.data<float>();
  parallel_for(0, l.N * l.C, plane_grain(l.S), [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      const int64_t c = p % l.C;
      const float ac = a[c], bc = b[c], dc = d[c], m = pm[c], lo = pl[c];
      const float* gp = pgy + p * l.S;
      const float* xp = px + p * l.S;
      float* out = pgx + p * l.S;
      for (int64_t j = 0; j < l.S; ++j) out[j] = gp[j] * ac + ((xp[j] - m) - lo) * bc + dc;
    }
  });
}

}  // namespace

DDP4J_REGISTER_KERNEL(sync_batch_norm_stats, CPU, stats);
DDP4J_REGISTER_KERNEL(sync_batch_norm_gather_stats, CPU, gather_stats);
DDP4J_REGISTER_KERNEL(sync_batch_norm_elemt, CPU, elemt);
DDP4J_REGISTER_KERNEL(sync_batch_norm_backward_reduce, CPU, backward_reduce);
DDP4J_REGISTER_KERNEL(sync_batch_norm_backward_elemt, CPU, backward_elemt);

}  // namespace ddp4j::cpu
