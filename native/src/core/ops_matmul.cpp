// matmul (MatmulNatives): shape checks with PyTorch's broadcasting of the batch dims, dispatch.
#include "ddp4j/broadcast.h"
#include "ddp4j/dispatch.h"
#include "ddp4j/ops.h"

namespace ddp4j::ops {

Tensor matmul(const Tensor& a, const Tensor& b, bool trans_a, bool trans_b) {
  DDP4J_CHECK_ARG(a.defined() && b.defined(), "matmul: an operand is missing");
  check_dtype("matmul", "a", a, DType::Float32);
  check_dtype("matmul", "b", b, DType::Float32);
  check_same_device("matmul", a, b);
  DDP4J_CHECK_ARG(a.dim() >= 2 && b.dim() >= 2, "matmul: the native op takes operands of at least 2 dimensions, got ",
                  shape_str(a.shape()), " and ", shape_str(b.shape()));
  const int na = a.dim(), nb = b.dim();
  const int64_t m = trans_a ? a.shape()[na - 1] : a.shape()[na - 2];
  const int64_t ka = trans_a ? a.shape()[na - 2] : a.shape()[na - 1];
  const int64_t kb = trans_b ? b.shape()[nb - 1] : b.shape()[nb - 2];
  const int64_t n = trans_b ? b.shape()[nb - 2] : b.shape()[nb - 1];
  DDP4J_CHECK_ARG(ka == kb, "matmul: shapes ", shape_str(a.shape()), trans_a ? " (transposed)" : "", " and ",
                  shape_str(b.shape()), trans_b ? " (transposed)" : "", " cannot be multiplied (", m, "x", ka,
                  " and ", kb, "x", n, "): the last dimension of the first must equal the second-to-last of the second");
  Shape shape = broadcast_shapes("matmul", Shape(a.shape().begin(), a.shape().end() - 2),
                                 Shape(b.shape().begin(), b.shape().end() - 2));
  shape.push_back(m);
  shape.push_back(n);
  Tensor out = Tensor::empty(shape, DType::Float32, a.device());
  static KernelSlot slot("matmul");
  slot.get<kernels::matmul_fn>(a.device())(a, b, trans_a, trans_b, out);
  return out;
}

}  // namespace ddp4j::ops
