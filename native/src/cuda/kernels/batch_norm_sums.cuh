// batch_norm_sums.cuh: the per-element sums both batch norms reduce per channel with
// channel_partials (reduce.cuh), over x viewed as [N, C, S] (S: the pixels of a plane). The CPU
// kernels share theirs in src/cpu/batch_norm_sums.h.
#pragma once
#include <cstdint>

namespace ddp4j::cuda {

/** Σ (x - k_c) and Σ (x - k_c)² with k_c = x[0, c, 0], the channel's first value (no cancellation for a large mean). */
struct ShiftedSums {
  const float* x;
  int64_t S;
  __device__ void operator()(int64_t off, int64_t c, double& s1, double& s2) const {
    const double v = static_cast<double>(x[off]) - static_cast<double>(x[c * S]);
    s1 += v;
    s2 += v * v;
  }
};

/** Σ gy and Σ (x - mean_c) gy. */
struct GradSums {
  const float* gy;
  const float* x;
  const float* mean;
  __device__ void operator()(int64_t off, int64_t c, double& s1, double& s2) const {
    const double g = gy[off];
    s1 += g;
    s2 += (static_cast<double>(x[off]) - static_cast<double>(mean[c])) * g;
  }
};

}  // namespace ddp4j::cuda
