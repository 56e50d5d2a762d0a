// Reductions over dimensions and softmax (ReduceNatives): checks, layout, output allocation, dispatch.
#include <cmath>

#include "ddp4j/broadcast.h"
#include "ddp4j/dispatch.h"
#include "ddp4j/ops.h"

namespace ddp4j::ops {
namespace {

/** The dimension of a float32 x that an op reduces over; a scalar counts as shape [1]. */
int reduced_dim(const char* op, const Tensor& x, int64_t dim) {
  DDP4J_CHECK_ARG(x.defined(), op, ": the input is missing");
  check_dtype(op, "input", x, DType::Float32);
  return wrap_dim(op, dim, x.dim(), x.shape());
}

/** [outer, size, inner] around dim d (a scalar: [1, 1, 1]). */
void split_at(const Tensor& x, int d, int64_t* outer, int64_t* size, int64_t* inner) {
  if (x.dim() == 0) {
    *outer = *size = *inner = 1;
    return;
  }
  *outer = shape_product(x.shape(), 0, d);
  *size = x.shape()[d];
  *inner = shape_product(x.shape(), d + 1, x.dim());
}

}  // namespace

Tensor sum_dims(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim, bool mean) {
  const char* op = mean ? "mean" : "sum";
  DDP4J_CHECK_ARG(x.defined(), op, ": the input is missing");
  check_dtype(op, "input", x, DType::Float32);
  const int n = x.dim();
  std::vector<bool> reduced(n, dims.empty());  // no dims: all of them, as torch.sum(x, dim=[])
  for (int64_t dim : dims) {
    const int d = wrap_dim(op, dim, n, x.shape());
    if (n == 0) continue;
    DDP4J_CHECK_ARG(!reduced[d], op, ": dimension ", dim, " appears twice in ", shape_str(dims));
    reduced[d] = true;
  }
  // Reduced dims moved last (a copy unless they already are), then each row summed.
  std::vector<int64_t> order;
  Shape out_shape;
  int64_t cols = 1;
  for (int d = 0; d < n; ++d) {
    if (!reduced[d]) {
      order.push_back(d);
      out_shape.push_back(x.shape()[d]);
    } else if (keepdim) {
      out_shape.push_back(1);
    }
  }
  for (int d = 0; d < n; ++d) {
    if (reduced[d]) {
      order.push_back(d);
      cols *= x.shape()[d];
    }
  }
  bool trailing = true;
  for (int i = 0; i < n; ++i) trailing = trailing && order[i] == i;
  const Tensor source = trailing ? x : permute(x, order);
  const int64_t rows = cols == 0 ? shape_numel(out_shape) : x.numel() / cols;
  Tensor out = Tensor::empty(out_shape, DType::Float32, x.device());
  const double scale = mean ? 1.0 / static_cast<double>(cols) : 1.0;  // mean of nothing: NaN, as PyTorch
  static KernelSlot slot("sum_rows");
  slot.get<kernels::sum_rows_fn>(x.device())(source, rows, cols, mean && cols == 0 ? NAN : scale, out);
  return out;
}

std::vector<Tensor> max_dim(const Tensor& x, int64_t dim, bool keepdim) {
  const int d = reduced_dim("max", x, dim);
  int64_t outer, size, inner;
  split_at(x, d, &outer, &size, &inner);
  DDP4J_CHECK_ARG(size > 0, "max: dimension ", dim, " of shape ", shape_str(x.shape()),
                  " is empty (the max of nothing is undefined)");
  Shape out_shape = x.shape();
  if (x.dim() > 0) {
    if (keepdim) {
      out_shape[d] = 1;
    } else {
      out_shape.erase(out_shape.begin() + d);
    }
  }
  Tensor values = Tensor::empty(out_shape, DType::Float32, x.device());
  Tensor indices = Tensor::empty(out_shape, DType::Int64, x.device());
  static KernelSlot slot("max_dim");
  slot.get<kernels::max_dim_fn>(x.device())(x, outer, size, inner, values, indices);
  return {values, indices};
}

Tensor softmax(const Tensor& x, int64_t dim, bool log) {
  const int d = reduced_dim(log ? "log_softmax" : "softmax", x, dim);
  int64_t outer, size, inner;
  split_at(x, d, &outer, &size, &inner);
  Tensor y = Tensor::empty(x.shape(), DType::Float32, x.device());
  if (x.numel() == 0) return y;
  static KernelSlot slot("softmax");
  slot.get<kernels::softmax_fn>(x.device())(x, outer, size, inner, log, y);
  return y;
}

Tensor softmax_backward(const Tensor& gy, const Tensor& y, int64_t dim, bool log) {
  const char* op = log ? "log_softmax_backward" : "softmax_backward";
  const int d = reduced_dim(op, y, dim);
  check_dtype(op, "gradient", gy, DType::Float32);
  check_same_shape(op, gy, y);
  check_same_device(op, gy, y);
  int64_t outer, size, inner;
  split_at(y, d, &outer, &size, &inner);
  Tensor gx = Tensor::empty(y.shape(), DType::Float32, y.device());
  if (y.numel() == 0) return gx;
  static KernelSlot slot("softmax_backward");
  slot.get<kernels::softmax_backward_fn>(y.device())(gy, y, outer, size, inner, log, gx);
  return gx;
}

}  // namespace ddp4j::ops
