// Broadcasting ops (BroadcastNatives): shape and dtype checks, output allocation, dispatch.
#include <cmath>

#include "ddp4j/broadcast.h"
#include "ddp4j/dispatch.h"
#include "ddp4j/ops.h"

namespace ddp4j::ops {
namespace {

using kernels::BinaryOp;

const char* binary_name(BinaryOp op) {
  static const char* const names[] = {"add", "sub", "mul", "div", "eq", "ne", "lt", "gt", "le", "ge"};
  return names[static_cast<int>(op)];
}

}  // namespace

Tensor broadcast_binary(const Tensor& a, const Tensor& b, BinaryOp op) {
  DDP4J_CHECK_ARG(static_cast<int>(op) >= 0 && static_cast<int>(op) <= static_cast<int>(BinaryOp::Ge),
                  "broadcast_binary: unknown op code ", static_cast<int>(op));
  const char* name = binary_name(op);
  DDP4J_CHECK_ARG(a.defined() && b.defined(), name, ": an operand is missing");
  check_same_device(name, a, b);
  const bool arithmetic = op <= BinaryOp::Div;
  if (arithmetic) {
    check_dtype(name, "a", a, DType::Float32);
    check_dtype(name, "b", b, DType::Float32);
  } else {
    DDP4J_CHECK_ARG(a.dtype() == b.dtype(), name, ": operands must have one dtype, got ", a.describe(), " and ",
                    b.describe());
    DDP4J_CHECK_ARG(!is_reduced_float(a.dtype()), name, ": ", a.describe(),
                    " is not supported yet: convert with tensor.to(DType.FLOAT32)");
  }
  const Shape shape = broadcast_shapes(name, a.shape(), b.shape());
  Tensor out = Tensor::empty(shape, arithmetic ? DType::Float32 : DType::Bool, a.device());
  static KernelSlot slot("broadcast_binary");
  slot.get<kernels::broadcast_binary_fn>(a.device())(a, b, op, out);
  return out;
}

Tensor where(const Tensor& condition, const Tensor& a, const Tensor& b) {
  DDP4J_CHECK_ARG(condition.defined() && a.defined() && b.defined(), "where: an operand is missing");
  check_dtype("where", "condition", condition, DType::Bool);
  DDP4J_CHECK_ARG(a.dtype() == b.dtype(), "where: a and b must have one dtype, got ", a.describe(), " and ",
                  b.describe());
  check_same_device("where", condition, a);
  check_same_device("where", a, b);
  const Shape shape = broadcast_shapes("where", broadcast_shapes("where", condition.shape(), a.shape()), b.shape());
  Tensor out = Tensor::empty(shape, a.dtype(), a.device());
  static KernelSlot slot("where");
  slot.get<kernels::where_fn>(a.device())(condition, a, b, out);
  return out;
}

Tensor masked_fill(const Tensor& x, const Tensor& mask, double value) {
  DDP4J_CHECK_ARG(x.defined() && mask.defined(), "masked_fill: an operand is missing");
  check_dtype("masked_fill", "mask", mask, DType::Bool);
  DDP4J_CHECK_ARG(!is_reduced_float(x.dtype()), "masked_fill: ", x.describe(),
                  " is not supported yet: convert with tensor.to(DType.FLOAT32)");
  check_same_device("masked_fill", x, mask);
  // 2^63 itself is out of range: the largest double below it is the last one that converts
  DDP4J_CHECK_ARG(x.dtype() != DType::Int64 || (std::isfinite(value) && value >= -9.223372036854775808e18 &&
                                                value < 9.223372036854775808e18),
                  "masked_fill: ", value, " does not fit the int64 ", x.describe(),
                  "; fill an int64 tensor with a finite value in its range");
  const Shape shape = broadcast_shapes("masked_fill", x.shape(), mask.shape());
  DDP4J_CHECK_ARG(shape == x.shape(), "masked_fill: mask ", shape_str(mask.shape()),
                  " must broadcast to the input's shape ", shape_str(x.shape()), " (it would make ", shape_str(shape),
                  ")");
  Tensor out = Tensor::empty(shape, x.dtype(), x.device());
  static KernelSlot slot("masked_fill");
  slot.get<kernels::masked_fill_fn>(x.device())(x, mask, value, out);
  return out;
}

}  // namespace ddp4j::ops
