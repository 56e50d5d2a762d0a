// Elementwise ops and reductions (ElementwiseNatives): checks, output allocation, dispatch.
#include "ddp4j/dispatch.h"
#include "ddp4j/ops.h"

namespace ddp4j::ops {

Tensor add(const Tensor& a, const Tensor& b, float alpha) {
  check_dtype("add", "a", a, DType::Float32);
  check_dtype("add", "b", b, DType::Float32);
  check_same_shape("add", a, b);
  check_same_device("add", a, b);
  Tensor out = Tensor::empty(a.shape(), a.dtype(), a.device());
  static KernelSlot slot("add");
  slot.get<kernels::add_fn>(a.device())(a, b, alpha, out);
  return out;
}

void add_(Tensor& a, const Tensor& b, float alpha) {
  check_dtype("add_", "a", a, DType::Float32);
  check_dtype("add_", "b", b, DType::Float32);
  DDP4J_CHECK_ARG(a.numel() == b.numel(), "add_: shapes must match, got ", shape_str(a.shape()), " and ",
                  shape_str(b.shape()));
  check_same_device("add_", a, b);
  static KernelSlot slot("add");
  slot.get<kernels::add_fn>(a.device())(a, b, alpha, a);
}

Tensor mul(const Tensor& a, const Tensor& b) {
  check_dtype("mul", "a", a, DType::Float32);
  check_dtype("mul", "b", b, DType::Float32);
  check_same_shape("mul", a, b);
  check_same_device("mul", a, b);
  Tensor out = Tensor::empty(a.shape(), a.dtype(), a.device());
  static KernelSlot slot("mul");
  slot.get<kernels::mul_fn>(a.device())(a, b, out);
  return out;
}

Tensor scale(const Tensor& a, float s) {
  check_dtype("scale", "a", a, DType::Float32);
  Tensor out = Tensor::empty(a.shape(), a.dtype(), a.device());
  static KernelSlot slot("scale");
  slot.get<kernels::scale_fn>(a.device())(a, s, out);
  return out;
}

void scale_(Tensor& a, float s) {
  check_dtype("scale_", "a", a, DType::Float32);
  static KernelSlot slot("scale");
  slot.get<kernels::scale_fn>(a.device())(a, s, a);
}

Tensor sum(const Tensor& a) {
  check_dtype("sum", "a", a, DType::Float32);
  Tensor out = Tensor::empty({}, DType::Float32, a.device());
  static KernelSlot slot("sum");
  slot.get<kernels::sum_fn>(a.device())(a, out);
  return out;
}

Tensor argmax_rows(const Tensor& x) {
  check_dtype("argmax", "input", x, DType::Float32);
  check_dim("argmax", "input", x, 2);
  DDP4J_CHECK_ARG(x.size(1) > 0, "argmax: rows are empty, shape ", shape_str(x.shape()));
  Tensor out = Tensor::empty({x.size(0)}, DType::Int64, x.device());
  static KernelSlot slot("argmax_rows");
  slot.get<kernels::argmax_rows_fn>(x.device())(x, out);
  return out;
}

}  // namespace ddp4j::ops
