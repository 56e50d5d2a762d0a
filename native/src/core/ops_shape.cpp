// Shape ops (ShapeNatives): checks, output allocation, dispatch. Each makes a contiguous copy.
#include <algorithm>

#include "ddp4j/broadcast.h"
#include "ddp4j/dispatch.h"
#include "ddp4j/ops.h"

namespace ddp4j::ops {
namespace {

void check_index(const char* op, const Tensor& x, int dim, const Tensor& index, int64_t limit) {
  DDP4J_CHECK_ARG(index.defined(), op, ": the index is missing");
  DDP4J_CHECK_ARG(index.dtype() == DType::Int64, op, ": index must be int64, got ", index.describe());
  check_same_device(op, x, index);
  // The values are checked on the host (an index on a GPU is copied back first: a synchronisation).
  const Tensor host = index.device().type == DeviceType::CPU ? index : to_device(index, Device{});
  const int64_t* p = host.data<int64_t>();
  for (int64_t i = 0; i < index.numel(); ++i) {
    DDP4J_CHECK_ARG(p[i] >= 0 && p[i] < limit, op, ": index value ", p[i], " at position ", i,
                    " is out of range for dimension ", dim, " of size ", limit, " of a tensor of shape ",
                    shape_str(x.shape()));
  }
}

}  // namespace

Tensor permute(const Tensor& x, const std::vector<int64_t>& dims) {
  const int n = x.dim();
  DDP4J_CHECK_ARG(static_cast<int>(dims.size()) == n, "permute: ", dims.size(), " dims given for a tensor of shape ",
                  shape_str(x.shape()), "; give one per dimension");
  std::vector<int> order(n);
  std::vector<bool> seen(n, false);
  Shape out_shape(n);
  for (int i = 0; i < n; ++i) {
    const int d = wrap_dim("permute", dims[i], n, x.shape());
    DDP4J_CHECK_ARG(!seen[d], "permute: dimension ", dims[i], " appears twice in ", shape_str(dims), " for shape ",
                    shape_str(x.shape()));
    seen[d] = true;
    order[i] = d;
    out_shape[i] = x.shape()[d];
  }
  Tensor out = Tensor::empty(out_shape, x.dtype(), x.device());
  static KernelSlot slot("permute");
  slot.get<kernels::permute_fn>(x.device())(x, order, out);
  return out;
}

Tensor transpose(const Tensor& x, int64_t d0, int64_t d1) {
  const int n = x.dim();
  std::vector<int64_t> dims(n);
  for (int i = 0; i < n; ++i) dims[i] = i;
  if (n == 0) {  // as torch.transpose of a scalar: dims 0 / -1 only
    wrap_dim("transpose", d0, n, x.shape());
    wrap_dim("transpose", d1, n, x.shape());
    return permute(x, dims);
  }
  std::swap(dims[wrap_dim("transpose", d0, n, x.shape())], dims[wrap_dim("transpose", d1, n, x.shape())]);
  return permute(x, dims);
}

Tensor cat(const std::vector<Tensor>& xs, int64_t dim) {
  DDP4J_CHECK_ARG(!xs.empty(), "cat: expected a non-empty list of tensors");
  const Tensor& first = xs[0];
  DDP4J_CHECK_ARG(first.dim() > 0, "cat: zero-dimensional tensor ", first.describe(), " cannot be concatenated");
  const int d = wrap_dim("cat", dim, first.dim(), first.shape());
  Shape out_shape = first.shape();
  out_shape[d] = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    const Tensor& x = xs[i];
    DDP4J_CHECK_ARG(x.dtype() == first.dtype() && x.device() == first.device(), "cat: tensor ", i, " is ",
                    x.describe(), " but tensor 0 is ", first.describe(), " (dtype and device must match)");
    bool same = x.dim() == first.dim();
    for (int k = 0; same && k < x.dim(); ++k) same = k == d || x.shape()[k] == first.shape()[k];
    DDP4J_CHECK_ARG(same, "cat: tensor ", i, " has shape ", shape_str(x.shape()), " but tensor 0 has ",
                    shape_str(first.shape()), "; sizes must match except in dimension ", d);
    out_shape[d] += x.shape()[d];
  }
  Tensor out = Tensor::empty(out_shape, first.dtype(), first.device());
  static KernelSlot slot("cat");
  slot.get<kernels::cat_fn>(first.device())(xs, d, out);
  return out;
}

Tensor narrow(const Tensor& x, int64_t dim, int64_t start, int64_t length) {
  DDP4J_CHECK_ARG(x.dim() > 0, "narrow: cannot narrow the zero-dimensional ", x.describe());
  const int d = wrap_dim("narrow", dim, x.dim(), x.shape());
  DDP4J_CHECK_ARG(start >= 0 && length >= 0 && start <= x.shape()[d] && length <= x.shape()[d] - start,
                  "narrow: elements [", start, ", ",
                  start + length, ") are outside dimension ", d, " of size ", x.shape()[d], " of shape ",
                  shape_str(x.shape()));
  Shape out_shape = x.shape();
  out_shape[d] = length;
  Tensor out = Tensor::empty(out_shape, x.dtype(), x.device());
  static KernelSlot slot("narrow");
  slot.get<kernels::narrow_fn>(x.device())(x, d, start, out);
  return out;
}

Tensor narrow_backward(const Tensor& gy, const Shape& x_shape, int64_t dim, int64_t start) {
  const int d = wrap_dim("narrow_backward", dim, static_cast<int>(x_shape.size()), x_shape);
  Shape expect = x_shape;
  expect[d] = gy.dim() == static_cast<int>(x_shape.size()) ? gy.shape()[d] : -1;
  DDP4J_CHECK_ARG(gy.shape() == expect && start >= 0 && start + gy.shape()[d] <= x_shape[d], "narrow_backward: gradient ",
                  shape_str(gy.shape()), " does not fit shape ", shape_str(x_shape), " at ", start, " along ", d);
  Tensor gx = Tensor::empty(x_shape, gy.dtype(), gy.device());
  static KernelSlot slot("narrow_backward");
  slot.get<kernels::narrow_backward_fn>(gy.device())(gy, d, start, gx);
  return gx;
}

Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index) {
  DDP4J_CHECK_ARG(x.dim() > 0, "index_select: the input ", x.describe(), " has no dimension to select from");
  const int d = wrap_dim("index_select", dim, x.dim(), x.shape());
  DDP4J_CHECK_ARG(index.defined() && index.dim() <= 1, "index_select: index must be 1-D (or a scalar), got ",
                  index.defined() ? index.describe() : std::string("none"));
  check_index("index_select", x, d, index, x.shape()[d]);
  Shape out_shape = x.shape();
  out_shape[d] = index.numel();
  Tensor out = Tensor::empty(out_shape, x.dtype(), x.device());
  static KernelSlot slot("index_select");
  slot.get<kernels::index_select_fn>(x.device())(x, d, index, out);
  return out;
}

Tensor index_select_backward(const Tensor& gy, const Shape& x_shape, int64_t dim, const Tensor& index) {
  check_dtype("index_select_backward", "gradient", gy, DType::Float32);
  const int d = wrap_dim("index_select_backward", dim, static_cast<int>(x_shape.size()), x_shape);
  Shape expect = x_shape;
  expect[d] = index.numel();
  DDP4J_CHECK_ARG(gy.shape() == expect, "index_select_backward: gradient ", shape_str(gy.shape()), " should be ",
                  shape_str(expect));
  // the index may have changed since the forward checked it: every value is checked again
  DDP4J_CHECK_ARG(index.dim() <= 1, "index_select_backward: index must be 1-D, got ", index.describe());
  check_index("index_select_backward", gy, d, index, x_shape[d]);
  Tensor gx = Tensor::empty(x_shape, DType::Float32, gy.device());
  static KernelSlot slot("index_select_backward");
  slot.get<kernels::index_select_backward_fn>(gy.device())(gy, d, index, gx);
  return gx;
}

namespace {
void check_gather_index(const char* op, const Shape& x_shape, int d, const Tensor& index) {
  DDP4J_CHECK_ARG(index.defined() && index.dim() == static_cast<int>(x_shape.size()), op,
                  ": index must have as many dimensions as the input ", shape_str(x_shape), ", got ",
                  index.defined() ? index.describe() : std::string("none"));
  for (int k = 0; k < index.dim(); ++k) {
    DDP4J_CHECK_ARG(k == d || index.shape()[k] <= x_shape[k], op, ": index ", shape_str(index.shape()),
                    " is larger than the input ", shape_str(x_shape), " in dimension ", k, " (only dimension ", d,
                    " may be larger)");
  }
}
}  // namespace

Tensor gather(const Tensor& x, int64_t dim, const Tensor& index) {
  DDP4J_CHECK_ARG(x.dim() > 0, "gather: the input ", x.describe(), " has no dimension to gather along");
  const int d = wrap_dim("gather", dim, x.dim(), x.shape());
  check_gather_index("gather", x.shape(), d, index);
  check_index("gather", x, d, index, x.shape()[d]);
  Tensor out = Tensor::empty(index.shape(), x.dtype(), x.device());
  static KernelSlot slot("gather");
  slot.get<kernels::gather_fn>(x.device())(x, d, index, out);
  return out;
}

Tensor gather_backward(const Tensor& gy, const Shape& x_shape, int64_t dim, const Tensor& index) {
  check_dtype("gather_backward", "gradient", gy, DType::Float32);
  const int d = wrap_dim("gather_backward", dim, static_cast<int>(x_shape.size()), x_shape);
  check_gather_index("gather_backward", x_shape, d, index);
  check_same_shape("gather_backward", gy, index);
  check_index("gather_backward", gy, d, index, x_shape[d]);  // it may have changed since the forward
  Tensor gx = Tensor::empty(x_shape, DType::Float32, gy.device());
  static KernelSlot slot("gather_backward");
  slot.get<kernels::gather_backward_fn>(gy.device())(gy, d, index, gx);
  return gx;
}

Tensor triangle(const Tensor& x, int64_t diagonal, bool upper) {
  const char* op = upper ? "triu" : "tril";
  DDP4J_CHECK_ARG(x.dim() >= 2, op, ": input must have at least 2 dimensions, got shape ", shape_str(x.shape()));
  DDP4J_CHECK_ARG(!is_reduced_float(x.dtype()), op, ": ", x.describe(),
                  " is not supported yet: convert with tensor.to(DType.FLOAT32)");
  Tensor out = Tensor::empty(x.shape(), x.dtype(), x.device());
  static KernelSlot slot("triangle");
  slot.get<kernels::triangle_fn>(x.device())(x, diagonal, upper, out);
  return out;
}

}  // namespace ddp4j::ops
