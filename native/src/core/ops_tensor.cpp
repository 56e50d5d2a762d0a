// Tensor-level ops (TensorNatives): fill, copies within and across devices, flatten/unflatten.
#include "ddp4j/dispatch.h"
#include "ddp4j/ops.h"

namespace ddp4j::ops {

void fill_(Tensor& t, double value) {
  static KernelSlot slot("fill");
  slot.get<kernels::fill_fn>(t.device())(t, value);
}

void copy_(const Tensor& src, Tensor& dst) {
  DDP4J_CHECK_ARG(src.numel() == dst.numel(), "copy: cannot copy ", src.describe(), " into ", dst.describe());
  if (src.dtype() != dst.dtype()) {  // converts, as torch.Tensor.copy_ does: floating types on the CPU so far
    const bool floats = src.dtype() != DType::Int64 && dst.dtype() != DType::Int64 && src.dtype() != DType::Bool &&
                        dst.dtype() != DType::Bool;
    DDP4J_CHECK_ARG(floats && src.device().type == DeviceType::CPU && dst.device().type == DeviceType::CPU,
                    "copy: cannot copy ", src.describe(), " into ", dst.describe(),
                    floats ? ": converting copies run on the CPU so far; copy within one dtype, or convert on the CPU"
                           : ": conversions to and from int64 and bool are not supported yet");
    static KernelSlot convert("to_dtype");
    convert.get<kernels::to_dtype_fn>(src.device())(src, dst);
    return;
  }
  if (src.device() != dst.device()) {
    static KernelSlot across("copy_across");
    across.get<kernels::copy_across_fn>(src.device().type != DeviceType::CPU ? src.device() : dst.device())(src, dst);
    return;
  }
  static KernelSlot slot("copy");
  slot.get<kernels::copy_fn>(src.device())(src, dst);
}

Tensor to_device(const Tensor& src, Device target) {
  if (src.device() == target) return src;
  Tensor dst = Tensor::empty(src.shape(), src.dtype(), target);
  copy_(src, dst);
  return dst;
}

Tensor to_dtype(const Tensor& src, DType dtype) {
  DDP4J_CHECK_ARG(src.defined(), "to(", dtype_name(dtype), "): the tensor is missing");
  DDP4J_CHECK_ARG(static_cast<int>(dtype) >= 0 && static_cast<int>(dtype) < kNumDTypes, "to: unknown dtype ",
                  static_cast<int>(dtype));
  if (src.dtype() == dtype) return src;
  DDP4J_CHECK_ARG(src.dtype() != DType::Int64 && dtype != DType::Int64 && src.dtype() != DType::Bool &&
                      dtype != DType::Bool,
                  "to(", dtype_name(dtype), ") of ",
                  src.describe(), " is not supported yet: conversions go between float32, bfloat16 and float16");
  DDP4J_CHECK_ARG(src.device().type == DeviceType::CPU, "to(", dtype_name(dtype), ") of ", src.describe(),
                  " is not supported yet on the GPU: convert on the CPU, tensor.to(Device.CPU).to(DType.",
                  dtype == DType::BFloat16 ? "BFLOAT16" : dtype == DType::Float16 ? "FLOAT16" : "FLOAT32",
                  ").to(device)");
  Tensor dst = Tensor::empty(src.shape(), dtype, src.device());
  static KernelSlot slot("to_dtype");
  slot.get<kernels::to_dtype_fn>(src.device())(src, dst);
  return dst;
}

namespace {
/** Checks that tensors tile flat exactly: flat's dtype and device, element counts adding up to its. */
void check_tiles(const char* op, const char* what, const std::vector<Tensor>& tensors, const Tensor& flat) {
  DDP4J_CHECK_ARG(flat.defined(), op, ": the flat tensor is missing");
  int64_t total = 0;
  for (size_t i = 0; i < tensors.size(); i++) {
    const Tensor& t = tensors[i];
    DDP4J_CHECK_ARG(t.dtype() == flat.dtype() && t.device() == flat.device(), op, ": ", what, " ", i, " is ",
                    t.describe(), " but the flat tensor is ", flat.describe(), " (dtype and device must match)");
    total += t.numel();
  }
  DDP4J_CHECK_ARG(total == flat.numel(), op, ": the ", tensors.size(), " ", what, "s hold ", total,
                  " elements but the flat tensor ", flat.describe(), " holds ", flat.numel());
}
}  // namespace

void flatten_into(const std::vector<Tensor>& sources, Tensor& flat) {
  check_tiles("flatten_into", "source", sources, flat);
  int64_t offset = 0;
  for (const Tensor& src : sources) {
    Tensor slice = flat.flat_slice(offset, src.shape());
    copy_(src, slice);
    offset += src.numel();
  }
}

void unflatten_from(const Tensor& flat, std::vector<Tensor>& destinations) {
  check_tiles("unflatten_from", "destination", destinations, flat);
  int64_t offset = 0;
  for (Tensor& dst : destinations) {
    copy_(flat.flat_slice(offset, dst.shape()), dst);
    offset += dst.numel();
  }
}

}  // namespace ddp4j::ops
