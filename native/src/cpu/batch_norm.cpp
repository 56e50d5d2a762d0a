// CPU BatchNorm2d over x[N, C, H, W]. One pass for the per-channel statistics (plane sums in
// float32 lanes, added in double), one pass that writes y = x * a + b with a = gamma * invstd,
// b = beta - mean * a (PyTorch's CPU form). The backward is likewise two passes. Training passes
// walk the tensor in memory order (image, channel, plane), one stream for the prefetcher, while
// every channel still adds its planes in image order. Threads split the statistics by channel
// (each channel's sums made by one thread, in that same order) and the element-wise passes by
// plane, so results do not depend on the thread count. The fused forms (batch_norm2d_relu_*) run
// the same passes with the ReLU (and a residual addition) applied where y is written, and the
// ReLU's mask applied where the backward reads gy, so they give the unfused composition's bits.
#include <immintrin.h>

#include <cmath>
#include <vector>

#ifndef __AVX2__
#error "batch_norm.cpp needs AVX2 and FMA (x86-64 Haswell or later; CMake passes -mavx2 -mfma)"
#endif

#include "ddp4j/dispatch.h"
#include "ddp4j/kernels.h"
#include "ddp4j/parallel.h"
#include "batch_norm_sums.h"

namespace ddp4j::cpu {
namespace {

using namespace bn;

/**
 * out[j] = y[j] > 0 ? g[j] : 0 over n elements (ReLU's backward; NaN in y blocks); with FromX,
 * y[j] = x[j] * scale + shift formed again by the forward's fused multiply-add (see grad_sums).
 */
template <bool FromX = false>
inline void mask_plane(const float* g, const float* y, int64_t n, float* out, const float* x = nullptr,
                       float scale = 0, float shift = 0) {
  alignas(32) static const int32_t kTail[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};
  const __m256 zero = _mm256_setzero_ps();
  const __m256 sc = _mm256_set1_ps(scale), sh = _mm256_set1_ps(shift);
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    const __m256 v = FromX ? _mm256_fmadd_ps(_mm256_loadu_ps(x + j), sc, sh) : _mm256_loadu_ps(y + j);
    const __m256 keep = _mm256_cmp_ps(v, zero, _CMP_GT_OQ);
    _mm256_storeu_ps(out + j, _mm256_and_ps(_mm256_loadu_ps(g + j), keep));
  }
  if (j < n) {
    const __m256i m = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(kTail + 8 - (n - j)));
    const __m256 v = FromX ? _mm256_fmadd_ps(_mm256_maskload_ps(x + j, m), sc, sh) : _mm256_maskload_ps(y + j, m);
    const __m256 keep = _mm256_cmp_ps(v, zero, _CMP_GT_OQ);
    _mm256_maskstore_ps(out + j, m, _mm256_and_ps(_mm256_maskload_ps(g + j, m), keep));
  }
}

/**
 * Channels per cache block of the training passes (forward_train_blocks, backward_any): on
 * planes of at least min_plane values a block of about kGrainSize values, so the second pass over
 * it finds it in cache, which pays where a tensor outgrows the last-level cache; on smaller planes
 * the whole range (c0, c1), walked in memory order, as short strided runs defeat the prefetcher.
 * Measured on Zen 4 (1 MiB L2, 32 MiB L3): the backward (three tensors read twice) gains from
 * 56 x 56 planes on, the forward (one tensor) only from 112 x 112.
 */
constexpr int64_t kBlockedPlaneForward = 8192;
constexpr int64_t kBlockedPlaneBackward = 2048;
inline int64_t cache_block(int64_t N, int64_t HW, int64_t c0, int64_t c1, int64_t min_plane) {
  return HW >= min_plane ? channel_grain(N, HW) : std::max<int64_t>(c1 - c0, 1);
}

/** affine_plane over the planes of x[N, C, HW] with a[c], b[c], split among the threads by plane. */
template <bool Relu, bool Residual>
void affine(const float* x, float* y, int64_t N, int64_t C, int64_t HW, const float* a, const float* b,
            const float* r) {
  parallel_for(0, N * C, plane_grain(HW), [=](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      affine_plane<Relu, Residual>(x + p * HW, Residual ? r + p * HW : nullptr, y + p * HW, HW, a[p % C], b[p % C]);
    }
  });
}

/** The plain, +ReLU and +residual+ReLU forms of affine, picked at run time. */
void affine_any(const float* x, float* y, int64_t N, int64_t C, int64_t HW, const float* a, const float* b,
                const float* r, bool relu) {
  if (!relu) {
    affine<false, false>(x, y, N, C, HW, a, b, nullptr);
  } else if (r == nullptr) {
    affine<true, false>(x, y, N, C, HW, a, b, nullptr);
  } else {
    affine<true, true>(x, y, N, C, HW, a, b, r);
  }
}

/**
 * y = relu?(bn(x) (+ r)) with batch statistics: saves mean and invstd and updates the running
 * statistics. Threads split the channels; each thread goes block by block (cache_block): the
 * block's sums in memory order (image by image, plane by
 * plane; each channel's planes still added in the same order, n ascending, so the sums are the
 * same as channel by channel), then y of the same planes while they are still in cache, so x is
 * read from memory once.
 */
template <bool Relu, bool Residual>
void forward_train_blocks(const Tensor& x, const Tensor& gamma, const Tensor& beta, Tensor& running_mean,
                          Tensor& running_var, double momentum, double eps, const float* r, Tensor& y,
                          Tensor& save_mean, Tensor& save_invstd, float* affine_out) {
  const int64_t N = x.size(0), C = x.size(1), HW = x.size(2) * x.size(3), count = N * HW;
  const float* px = x.data<float>();
  float* py = y.data<float>();
  const float* pg = gamma.data<float>();
  const float* pb = beta.data<float>();
  float* rm = running_mean.data<float>();
  float* rv = running_var.data<float>();
  float* smean = save_mean.data<float>();
  float* sinvstd = save_invstd.data<float>();
  std::vector<double> s1(static_cast<size_t>(C), 0.0), s2(static_cast<size_t>(C), 0.0);
  std::vector<float> a(static_cast<size_t>(C)), b(static_cast<size_t>(C));
  const int64_t cg = channel_grain(N, HW);
  parallel_for(0, C, cg, [&](int64_t c0, int64_t c1) {
    const int64_t block = cache_block(N, HW, c0, c1, kBlockedPlaneForward);
    for (int64_t b0 = c0; b0 < c1; b0 += block) {
      const int64_t b1 = std::min(c1, b0 + block);
      for (int64_t n = 0; n < N; ++n) {
        for (int64_t c = b0; c < b1; ++c) {
          // Sums are shifted by the channel's first value so that E[v²] - E[v]² does not cancel
          // when the mean is large compared with the spread.
          shifted_sums(px + (n * C + c) * HW, HW, px[c * HW], s1[c], s2[c]);
        }
      }
      for (int64_t c = b0; c < b1; ++c) {
        const float k = px[c * HW];
        const double d_mean = s1[c] / count;
        const double mean = k + d_mean;
        const double var = std::max(0.0, s2[c] / count - d_mean * d_mean);  // biased: used to normalise
        const double invstd = 1.0 / std::sqrt(var + eps);
        smean[c] = static_cast<float>(mean);
        sinvstd[c] = static_cast<float>(invstd);
        const double ac = pg[c] * invstd;
        a[c] = static_cast<float>(ac);
        b[c] = static_cast<float>(pb[c] - mean * ac);
        // Running statistics use the unbiased variance, as torch.nn.BatchNorm2d.
        const double unbiased = var * static_cast<double>(count) / static_cast<double>(count - 1);
        rm[c] = static_cast<float>((1 - momentum) * rm[c] + momentum * mean);
        rv[c] = static_cast<float>((1 - momentum) * rv[c] + momentum * unbiased);
      }
      for (int64_t n = 0; n < N; ++n) {
        for (int64_t c = b0; c < b1; ++c) {
          const int64_t off = (n * C + c) * HW;
          affine_plane<Relu, Residual>(px + off, Residual ? r + off : nullptr, py + off, HW, a[c], b[c]);
        }
      }
    }
  });
  if (affine_out != nullptr) {  // the exact coefficients y was made with, for batch_norm2d_relu_recompute
    std::copy(a.begin(), a.end(), affine_out);
    std::copy(b.begin(), b.end(), affine_out + C);
  }
}

/** y = relu?(bn(x) (+ residual)) with batch statistics; residual may be undefined. */
void forward_train_any(const Tensor& x, const Tensor& gamma, const Tensor& beta, Tensor& running_mean,
                       Tensor& running_var, double momentum, double eps, const Tensor& residual, bool relu,
                       Tensor& y, Tensor& save_mean, Tensor& save_invstd, float* affine_out) {
  if (!relu) {
    forward_train_blocks<false, false>(x, gamma, beta, running_mean, running_var, momentum, eps, nullptr, y, save_mean,
                                       save_invstd, affine_out);
  } else if (!residual.defined()) {
    forward_train_blocks<true, false>(x, gamma, beta, running_mean, running_var, momentum, eps, nullptr, y, save_mean,
                                      save_invstd, affine_out);
  } else {
    forward_train_blocks<true, true>(x, gamma, beta, running_mean, running_var, momentum, eps,
                                     residual.data<float>(), y, save_mean, save_invstd, affine_out);
  }
}

void forward_train(const Tensor& x, const Tensor& gamma, const Tensor& beta, Tensor& running_mean,
                   Tensor& running_var, double momentum, double eps, Tensor& y, Tensor& save_mean,
                   Tensor& save_invstd, Tensor& coefficients) {
  forward_train_any(x, gamma, beta, running_mean, running_var, momentum, eps, Tensor(), false, y, save_mean,
                    save_invstd, coefficients.defined() ? coefficients.data<float>() : nullptr);
}

void relu_forward_train(const Tensor& x, const Tensor& gamma, const Tensor& beta, Tensor& running_mean,
                        Tensor& running_var, double momentum, double eps, const Tensor& residual, Tensor& y,
                        Tensor& save_mean, Tensor& save_invstd, Tensor& coefficients) {
  forward_train_any(x, gamma, beta, running_mean, running_var, momentum, eps, residual, true, y, save_mean,
                    save_invstd, coefficients.data<float>());
}

/** y = relu?(x * affine[0][c] + affine[1][c] (+ residual)): the training forwards' y again, bit for bit. */
void recompute(const Tensor& x, const Tensor& coefficients, const Tensor& residual, bool relu, Tensor& y) {
  const int64_t N = x.size(0), C = x.size(1), HW = x.size(2) * x.size(3);
  const float* pa = coefficients.data<float>();
  affine_any(x.data<float>(), y.data<float>(), N, C, HW, pa, pa + C,
             residual.defined() ? residual.data<float>() : nullptr, relu);
}

/** y = relu?(bn(x) (+ residual)) with the running statistics; residual may be undefined. */
void forward_eval_any(const Tensor& x, const Tensor& gamma, const Tensor& beta, const Tensor& running_mean,
                      const Tensor& running_var, double eps, const Tensor& residual, bool relu, Tensor& y) {
  const int64_t N = x.size(0), C = x.size(1), HW = x.size(2) * x.size(3);
  const float* pg = gamma.data<float>();
  const float* pb = beta.data<float>();
  const float* rm = running_mean.data<float>();
  const float* rv = running_var.data<float>();
  std::vector<float> a(static_cast<size_t>(C)), b(static_cast<size_t>(C));
  for (int64_t c = 0; c < C; ++c) {
    const double ac = pg[c] / std::sqrt(static_cast<double>(rv[c]) + eps);
    a[c] = static_cast<float>(ac);
    b[c] = static_cast<float>(pb[c] - rm[c] * ac);
  }
  affine_any(x.data<float>(), y.data<float>(), N, C, HW, a.data(), b.data(),
             residual.defined() ? residual.data<float>() : nullptr, relu);
}

void forward_eval(const Tensor& x, const Tensor& gamma, const Tensor& beta, const Tensor& running_mean,
                  const Tensor& running_var, double eps, Tensor& y) {
  forward_eval_any(x, gamma, beta, running_mean, running_var, eps, Tensor(), false, y);
}

void relu_forward_eval(const Tensor& x, const Tensor& gamma, const Tensor& beta, const Tensor& running_mean,
                       const Tensor& running_var, double eps, const Tensor& residual, Tensor& y) {
  forward_eval_any(x, gamma, beta, running_mean, running_var, eps, residual, true, y);
}

/**
 * The batch-norm backward of g = gy, or with Masked g = (y > 0 ? gy : 0) (the ReLU after it), also
 * written to gmasked when that is defined. With FromX y is not read but formed again from x and
 * the forward's coefficients affine [2, C] (y = x * scale + shift; no residual).
 */
template <bool Masked, bool FromX = false>
void backward_any(const Tensor& gy, const Tensor& y, const Tensor& x, const Tensor& gamma, const Tensor& save_mean,
                  const Tensor& save_invstd, Tensor& gx, Tensor& ggamma, Tensor& gbeta, Tensor& gmasked,
                  const Tensor& affine = Tensor()) {
  const int64_t N = x.size(0), C = x.size(1), HW = x.size(2) * x.size(3), count = N * HW;
  const float* px = x.data<float>();
  const float* pgy = gy.data<float>();
  const float* pyy = Masked && !FromX ? y.data<float>() : nullptr;
  const float* pscale = FromX ? affine.data<float>() : nullptr;
  const float* pshift = FromX ? pscale + C : nullptr;
  float* pgm = Masked && gmasked.defined() ? gmasked.data<float>() : nullptr;
  float* pgx = gx.data<float>();
  // Both passes go through memory in its natural order (see forward_train); each channel's
  // planes are still added in the same order, so the sums are the same as channel by channel.
  const float* means = save_mean.data<float>();
  const float* pinvstd = save_invstd.data<float>();
  const float* pgamma = gamma.data<float>();
  float* pggamma = ggamma.data<float>();
  float* pgbeta = gbeta.data<float>();
  std::vector<double> sg(static_cast<size_t>(C), 0.0), sxg(static_cast<size_t>(C), 0.0);
  std::vector<float> a(static_cast<size_t>(C)), b(static_cast<size_t>(C)), d(static_cast<size_t>(C));
  // Without a stored masked gradient pass 2 makes each plane's in a buffer first (AVX2, masked
  // tail: no branch per element), so its gx loop is the same code in every form.
  const bool reread = Masked && pgm == nullptr;
  const float* g = pgm != nullptr ? pgm : pgy;
  const int64_t cg = channel_grain(N, HW);
  parallel_for(0, C, cg, [&](int64_t c0, int64_t c1) {
    std::vector<float> buffer(reread ? static_cast<size_t>(HW) : 0);
    // Block by block as forward_train_blocks: the sums, then gx of the same planes while they are
    // still in cache.
    const int64_t block = cache_block(N, HW, c0, c1, kBlockedPlaneBackward);
    for (int64_t b0 = c0; b0 < c1; b0 += block) {
      const int64_t b1 = std::min(c1, b0 + block);
      for (int64_t n = 0; n < N; ++n) {
        for (int64_t c = b0; c < b1; ++c) {
          const int64_t off = (n * C + c) * HW;
          grad_sums<Masked, FromX>(pgy + off, pyy != nullptr ? pyy + off : nullptr, px + off, HW, means[c], sg[c],
                                   sxg[c], pgm != nullptr ? pgm + off : nullptr, FromX ? pscale[c] : 0,
                                   FromX ? pshift[c] : 0);
        }
      }
      for (int64_t c = b0; c < b1; ++c) {
        const double invstd = pinvstd[c];
        pgbeta[c] = static_cast<float>(sg[c]);
        pggamma[c] = static_cast<float>(sxg[c] * invstd);
        // gx = gamma * invstd * (gy - mean(gy) - xhat * mean(gy * xhat)), written as
        // gy * a + (x - mean) * b + d; x - mean is formed first so a large mean does not cancel.
        const double scale = pgamma[c] * invstd;
        const double k = count > 0 ? sxg[c] * invstd * invstd / count : 0.0;
        const double gmean = count > 0 ? sg[c] / count : 0.0;
        a[c] = static_cast<float>(scale);
        b[c] = static_cast<float>(-scale * k);
        d[c] = static_cast<float>(-scale * gmean);
      }
      for (int64_t n = 0; n < N; ++n) {
        for (int64_t c = b0; c < b1; ++c) {
          const int64_t off = (n * C + c) * HW;
          const float ac = a[c], bc = b[c], dc = d[c], m = means[c];
          const float* gp = g + off;
          if (reread) {
            if constexpr (FromX) {
              mask_plane<true>(g + off, nullptr, HW, buffer.data(), px + off, pscale[c], pshift[c]);
            } else {
              mask_plane(g + off, pyy + off, HW, buffer.data());
            }
            gp = buffer.data();
          }
          const float* xp = px + off;
          float* out = pgx + off;
          for (int64_t j = 0; j < HW; ++j) out[j] = gp[j] * ac + (xp[j] - m) * bc + dc;
        }
      }
    }
  });
}

void backward(const Tensor& gy, const Tensor& x, const Tensor& gamma, const Tensor& save_mean,
              const Tensor& save_invstd, Tensor& gx, Tensor& ggamma, Tensor& gbeta) {
  Tensor none;
  backward_any<false>(gy, Tensor(), x, gamma, save_mean, save_invstd, gx, ggamma, gbeta, none);
}

void relu_backward(const Tensor& gy, const Tensor& y, const Tensor& x, const Tensor& gamma, const Tensor& save_mean,
                   const Tensor& save_invstd, const Tensor& affine, Tensor& gx, Tensor& ggamma, Tensor& gbeta,
                   Tensor& gmasked) {
  if (y.defined()) {
    backward_any<true>(gy, y, x, gamma, save_mean, save_invstd, gx, ggamma, gbeta, gmasked);
  } else {
    backward_any<true, true>(gy, y, x, gamma, save_mean, save_invstd, gx, ggamma, gbeta, gmasked, affine);
  }
}

}  // namespace

DDP4J_REGISTER_KERNEL(batch_norm2d_forward_train, CPU, forward_train);
DDP4J_REGISTER_KERNEL(batch_norm2d_forward_eval, CPU, forward_eval);
DDP4J_REGISTER_KERNEL(batch_norm2d_backward, CPU, backward);
DDP4J_REGISTER_KERNEL(batch_norm2d_relu_forward_train, CPU, relu_forward_train);
DDP4J_REGISTER_KERNEL(batch_norm2d_relu_forward_eval, CPU, relu_forward_eval);
DDP4J_REGISTER_KERNEL(batch_norm2d_relu_backward, CPU, relu_backward);
DDP4J_REGISTER_KERNEL(batch_norm2d_recompute, CPU, recompute);

}  // namespace ddp4j::cpu
