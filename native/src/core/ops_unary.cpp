// Unary element-wise ops (UnaryNatives): dtype checks, output allocation, dispatch.
#include "ddp4j/dispatch.h"
#include "ddp4j/ops.h"

namespace ddp4j::ops {

Tensor unary(const Tensor& x, kernels::UnaryOp op, double scalar) {
  using kernels::UnaryOp;
  DDP4J_CHECK_ARG(static_cast<int>(op) >= 0 && static_cast<int>(op) <= static_cast<int>(UnaryOp::LogicalNot),
                  "unary: unknown op code ", static_cast<int>(op));
  static const char* const names[] = {"exp", "log", "tanh", "pow", "sqrt", "neg", "add", "mul", "div", "logical_not"};
  const char* name = names[static_cast<int>(op)];
  DDP4J_CHECK_ARG(x.defined(), name, ": the input is missing");
  check_dtype(name, "input", x, op == UnaryOp::LogicalNot ? DType::Bool : DType::Float32);
  Tensor out = Tensor::empty(x.shape(), x.dtype(), x.device());
  static KernelSlot slot("unary");
  slot.get<kernels::unary_fn>(x.device())(x, op, scalar, out);
  return out;
}

}  // namespace ddp4j::ops
