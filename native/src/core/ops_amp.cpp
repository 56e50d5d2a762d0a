// Autocast and GradScaler ops (torch.amp): argument checks, output allocation, dispatch; the CPU
// GEMM kernel choice (cpu/gemm.h) for Autocast.cpuKernel().
#include <cstring>

#include "cpu/gemm.h"
#include "ddp4j/dispatch.h"
#include "ddp4j/ops.h"

namespace ddp4j::ops {

Tensor round_to_low_precision(const Tensor& x, DType low) {
  check_dtype("round_to_low_precision", "input", x, DType::Float32);
  DDP4J_CHECK_ARG(low == DType::BFloat16 || low == DType::Float16,
                  "round_to_low_precision: dtype must be bfloat16 or float16, got ", dtype_name(low));
  Tensor out = Tensor::empty(x.shape(), DType::Float32, x.device());
  static KernelSlot slot("round_to_low_precision");
  slot.get<kernels::round_to_low_precision_fn>(x.device())(x, low, out);
  return out;
}

void non_finite_check_and_unscale_(Tensor& x, float inv_scale, Tensor& found) {
  constexpr const char* kOp = "non_finite_check_and_unscale_";
  check_dtype(kOp, "gradient", x, DType::Float32);
  check_dtype(kOp, "found_inf", found, DType::Float32);
  check_same_device(kOp, x, found);
  DDP4J_CHECK_ARG(found.numel() == 1, kOp, ": found_inf must have one element, got shape ", shape_str(found.shape()));
  if (x.numel() == 0) return;
  static KernelSlot slot("non_finite_check_and_unscale");
  slot.get<kernels::non_finite_check_and_unscale_fn>(x.device())(x, inv_scale, found);
}

const char* autocast_cpu_kernel() { return cpu::bf16_kernel_name(cpu::bf16_kernel()); }

void set_autocast_cpu_kernel(const char* name) {
  if (std::strcmp(name, "avx512bf16") == 0) {
    cpu::set_bf16_kernel(cpu::LowPrecisionKernel::Avx512Bf16);
  } else {
    DDP4J_CHECK_ARG(std::strcmp(name, "widen") == 0, "autocast: CPU kernel must be avx512bf16 or widen, got ", name);
    cpu::set_bf16_kernel(cpu::LowPrecisionKernel::Widen);
  }
}

}  // namespace ddp4j::ops
