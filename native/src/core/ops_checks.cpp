// Shared argument checks for the ops: every message names the op, the argument and the shapes.
#include "ddp4j/ops.h"

namespace ddp4j::ops {

void check_dtype(const char* op, const char* what, const Tensor& t, DType dtype) {
  if (t.dtype() == dtype) return;
  if (dtype == DType::Float32 && is_reduced_float(t.dtype())) {
    throw Error(ErrorKind::InvalidArgument,
                detail::concat(op, ": ", what, " must be float32, got ", t.describe(), "; ", op, " of ",
                               dtype_name(t.dtype()), " is not supported yet: convert with tensor.to(DType.FLOAT32)"));
  }
  DDP4J_CHECK_ARG(false, op, ": ", what, " must be ", dtype_name(dtype), ", got ", t.describe());
}

void check_dim(const char* op, const char* what, const Tensor& t, int dim) {
  DDP4J_CHECK_ARG(t.dim() == dim, op, ": ", what, " must have ", dim, " dimensions, got shape ",
                  shape_str(t.shape()));
}

void check_same_device(const char* op, const Tensor& a, const Tensor& b) {
  DDP4J_CHECK_ARG(a.device() == b.device(), op, ": tensors are on different devices (", a.device().str(), " and ",
                  b.device().str(), "); move them with to(device)");
}

void check_same_shape(const char* op, const Tensor& a, const Tensor& b) {
  DDP4J_CHECK_ARG(a.shape() == b.shape(), op, ": shapes must match, got ", shape_str(a.shape()), " and ",
                  shape_str(b.shape()));
}

/** A per-channel tensor (gamma, beta, running or saved statistics) must be float32 [C] on x's device. */
void check_channel_tensor(const char* op, const char* what, const Tensor& x, const Tensor& t) {
  DDP4J_CHECK_ARG(t.defined(), op, ": ", what, " is missing");
  check_dtype(op, what, t, DType::Float32);
  check_same_device(op, x, t);
  DDP4J_CHECK_ARG(t.dim() == 1 && t.size(0) == x.size(1), op, ": input ", shape_str(x.shape()), " has ", x.size(1),
                  " channels but ", what, " ", shape_str(t.shape()), " expects ",
                  t.dim() == 1 ? t.size(0) : t.numel());
}

void check_autocast_dtype(const char* op, DType compute) {
  DDP4J_CHECK_ARG(compute == DType::Float32 || compute == DType::BFloat16 || compute == DType::Float16, op,
                  ": autocast dtype must be bfloat16 or float16 (float32: no autocast), got ", dtype_name(compute));
}

}  // namespace ddp4j::ops
