// CPU GELU, exact (erf) and tanh-approximated, forward and backward, element by element: each
// element is computed by one thread, so the bits do not depend on the thread count. The tanh form
// (GPT-2's) runs vectorised on vector_math.h's tanh.
#include <cmath>

#include "cpu/vector_math.h"

#include "ddp4j/dispatch.h"
#include "ddp4j/parallel.h"
#include "ddp4j/transformer_kernels.h"

namespace ddp4j::cpu {
namespace {

constexpr float kSqrtHalf = 0.70710678118654752f;      // 1 / sqrt(2)
constexpr float kInvSqrt2Pi = 0.39894228040143268f;    // 1 / sqrt(2 pi)
constexpr float kSqrt2OverPi = 0.79788456080286536f;   // sqrt(2 / pi)
constexpr float kCubic = 0.044715f;

DDP4J_VECTOR_CLONES void gelu_tanh_forward(const float* px, float* py, int64_t lo, int64_t hi) {
  for (int64_t i = lo; i < hi; ++i) {
    const float v = px[i];
    py[i] = 0.5f * v * (1.0f + tanh_approx(kSqrt2OverPi * (v + kCubic * v * v * v)));
  }
}

DDP4J_VECTOR_CLONES void gelu_tanh_backward(const float* pg, const float* px, float* pgx, int64_t lo, int64_t hi) {
  for (int64_t i = lo; i < hi; ++i) {
    const float v = px[i];
    const float t = tanh_approx(kSqrt2OverPi * (v + kCubic * v * v * v));
    const float dinner = kSqrt2OverPi * (1.0f + 3.0f * kCubic * v * v);
    pgx[i] = pg[i] * (0.5f * (1.0f + t) + 0.5f * v * (1.0f - t * t) * dinner);
  }
}

void gelu_forward(const Tensor& x, bool tanh, Tensor& y) {
  const float* px = x.data<float>();
  float* py = y.data<float>();
  parallel_for(0, x.numel(), kGrainSize, [=](int64_t lo, int64_t hi) {
    if (tanh) {
      gelu_tanh_forward(px, py, lo, hi);
    } else {
      for (int64_t i = lo; i < hi; ++i) py[i] = 0.5f * px[i] * (1.0f + std::erf(px[i] * kSqrtHalf));
    }
  });
}

void gelu_backward(const Tensor& gy, const Tensor& x, bool tanh, Tensor& gx) {
  const float* pg = gy.data<float>();
  const float* px = x.data<float>();
  float* pgx = gx.data<float>();
  parallel_for(0, x.numel(), kGrainSize, [=](int64_t lo, int64_t hi) {
    if (tanh) {
      gelu_tanh_backward(pg, px, pgx, lo, hi);
    } else {
      for (int64_t i = lo; i < hi; ++i) {
        const float v = px[i];
        const float cdf = 0.5f * (1.0f + std::erf(v * kSqrtHalf));
        const float pdf = kInvSqrt2Pi * std::exp(-0.5f * v * v);
        pgx[i] = pg[i] * (cdf + v * pdf);
      }
    }
  });
}

}  // namespace

DDP4J_REGISTER_KERNEL(gelu_forward, CPU, gelu_forward);
DDP4J_REGISTER_KERNEL(gelu_backward, CPU, gelu_backward);

}  // namespace ddp4j::cpu
