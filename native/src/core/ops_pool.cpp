// MaxPool2d ops: argument checks (messages name the op and the shapes), output allocation, dispatch.
#include "ddp4j/dispatch.h"
#include "ddp4j/ops.h"

namespace ddp4j::ops {

std::vector<Tensor> max_pool2d_forward(const Tensor& x, const kernels::Pool2dGeometry& g) {
  constexpr const char* op = "max_pool2d";
  check_dtype(op, "input", x, DType::Float32);
  DDP4J_CHECK_ARG(x.dim() == 4, op, ": input must be 4-D [N, C, H, W], got shape ", shape_str(x.shape()));
  DDP4J_CHECK_ARG(g.kernel_h > 0 && g.kernel_w > 0, op, ": kernel size must be positive, got ", g.kernel_h, "x",
                  g.kernel_w);
  DDP4J_CHECK_ARG(g.stride_h > 0 && g.stride_w > 0, op, ": stride must be positive, got (", g.stride_h, ", ",
                  g.stride_w, ")");
  // As PyTorch: more padding would allow windows that see only padding.
  DDP4J_CHECK_ARG(g.pad_h >= 0 && g.pad_w >= 0 && g.pad_h <= g.kernel_h / 2 && g.pad_w <= g.kernel_w / 2, op,
                  ": padding (", g.pad_h, ", ", g.pad_w, ") must be non-negative and at most half of the kernel size ",
                  g.kernel_h, "x", g.kernel_w);
  const int64_t hp = x.size(2) + 2 * int64_t{g.pad_h}, wp = x.size(3) + 2 * int64_t{g.pad_w};
  DDP4J_CHECK_ARG(hp >= g.kernel_h && wp >= g.kernel_w, op, ": input ", shape_str(x.shape()), " padded to ", hp, "x",
                  wp, " is smaller than the ", g.kernel_h, "x", g.kernel_w, " kernel");
  const Shape y_shape = {x.size(0), x.size(1), (hp - g.kernel_h) / g.stride_h + 1, (wp - g.kernel_w) / g.stride_w + 1};
  Tensor y = Tensor::empty(y_shape, DType::Float32, x.device());
  Tensor indices = Tensor::empty(y_shape, DType::Int64, x.device());
  static KernelSlot slot("max_pool2d_forward");
  slot.get<kernels::max_pool2d_forward_fn>(x.device())(x, y, indices, g);
  return {y, indices};
}

Tensor max_pool2d_backward(const Tensor& gy, const Tensor& indices, const Shape& x_shape) {
  constexpr const char* op = "max_pool2d_backward";
  check_dtype(op, "grad_output", gy, DType::Float32);
  check_dtype(op, "indices", indices, DType::Int64);
  check_same_device(op, gy, indices);
  DDP4J_CHECK_ARG(gy.dim() == 4 && gy.shape() == indices.shape(), op, ": grad_output ", shape_str(gy.shape()),
                  " and indices ", shape_str(indices.shape()), " must have the same 4-D shape");
  DDP4J_CHECK_ARG(x_shape.size() == 4 && x_shape[0] == gy.size(0) && x_shape[1] == gy.size(1), op,
                  ": input shape ", shape_str(x_shape), " does not match grad_output ", shape_str(gy.shape()));
  for (int64_t s : x_shape) DDP4J_CHECK_ARG(s >= 0, op, ": invalid input shape ", shape_str(x_shape));
  Tensor gx = Tensor::empty(x_shape, DType::Float32, gy.device());
  static KernelSlot slot("max_pool2d_backward");
  slot.get<kernels::max_pool2d_backward_fn>(gy.device())(gy, indices, gx);
  return gx;
}

}  // namespace ddp4j::ops
