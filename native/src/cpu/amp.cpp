// CPU kernels of torch.amp's helpers: rounding a float32 tensor to bfloat16 / float16 values
// (autocast's operands where a device has no rounding GEMM) and GradScaler's one-pass unscale
// with the inf/NaN check (torch._amp_foreach_non_finite_check_and_unscale_).
#include <atomic>
#include <cmath>

#include "cpu/convert.h"
#include "ddp4j/dispatch.h"
#include "ddp4j/kernels.h"
#include "ddp4j/parallel.h"

namespace ddp4j::cpu {
namespace {

void round_to_low_precision_kernel(const Tensor& x, DType low, Tensor& out) {
  const float* px = x.data<float>();
  float* py = out.data<float>();
  parallel_for(0, x.numel(), kGrainSize, [=](int64_t b, int64_t e) { round_to_low_precision(low, px + b, py + b, e - b); });
}

void non_finite_check_and_unscale(const Tensor& x, float inv_scale, Tensor& found) {
  float* px = x.data<float>();
  std::atomic<bool> any{false};
  parallel_for(0, x.numel(), kGrainSize, [=, &any](int64_t b, int64_t e) {
    // As PyTorch: the check reads the value before it is multiplied; the flag is one OR over the
    // range, so the loop vectorises.
    bool bad = false;
    for (int64_t i = b; i < e; ++i) {
      const float v = px[i];
      bad |= !std::isfinite(v);
      px[i] = v * inv_scale;
    }
    if (bad) any.store(true, std::memory_order_relaxed);
  });
  if (any.load()) found.data<float>()[0] = 1.0f;
}

}  // namespace

DDP4J_REGISTER_KERNEL(round_to_low_precision, CPU, round_to_low_precision_kernel);
DDP4J_REGISTER_KERNEL(non_finite_check_and_unscale, CPU, non_finite_check_and_unscale);

}  // namespace ddp4j::cpu
