// Pooling ops (MaxPool2d, AvgPool2d, AdaptiveAvgPool2d): argument checks with PyTorch's rules
// (messages name the op and the shapes), output sizes, output allocation, dispatch.
#include "ddp4j/dispatch.h"
#include "ddp4j/ops.h"

namespace ddp4j::ops {
namespace {

/** Floor division (PyTorch's div_rtn): rounds toward negative infinity. */
int64_t div_floor(int64_t a, int64_t b) {
  const int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

/** torch's pool2d_shape_check: positive kernel, stride and dilation; padding at most half the kernel. */
void check_geometry(const char* op, const kernels::Pool2dGeometry& g) {
  DDP4J_CHECK_ARG(g.kernel_h > 0 && g.kernel_w > 0, op, ": kernel size must be positive, got ", g.kernel_h, "x",
                  g.kernel_w);
  DDP4J_CHECK_ARG(g.stride_h > 0 && g.stride_w > 0, op, ": stride must be positive, got (", g.stride_h, ", ",
                  g.stride_w, ")");
  DDP4J_CHECK_ARG(g.dilation_h > 0 && g.dilation_w > 0, op, ": dilation must be positive, got (", g.dilation_h, ", ",
                  g.dilation_w, ")");
  // As PyTorch: more padding would allow windows that see only padding.
  DDP4J_CHECK_ARG(g.pad_h >= 0 && g.pad_w >= 0 && g.pad_h <= g.kernel_h / 2 && g.pad_w <= g.kernel_w / 2, op,
                  ": padding (", g.pad_h, ", ", g.pad_w, ") must be non-negative and at most half of the kernel size ",
                  g.kernel_h, "x", g.kernel_w);
}

/** The [N, C, P, Q] output shape of a pool over x; throws when P or Q would be below 1. */
Shape pooled_shape(const char* op, const Tensor& x, const kernels::Pool2dGeometry& g) {
  check_dtype(op, "input", x, DType::Float32);
  DDP4J_CHECK_ARG(x.dim() == 4, op, ": input must be 4-D [N, C, H, W], got shape ", shape_str(x.shape()));
  check_geometry(op, g);
  const int64_t P = pool2d_output_size(x.size(2), g.kernel_h, g.stride_h, g.pad_h, g.dilation_h, g.ceil_mode);
  const int64_t Q = pool2d_output_size(x.size(3), g.kernel_w, g.stride_w, g.pad_w, g.dilation_w, g.ceil_mode);
  DDP4J_CHECK_ARG(P >= 1 && Q >= 1, op, ": input ", shape_str(x.shape()), " is too small for a ", g.kernel_h, "x",
                  g.kernel_w, " window (dilation ", g.dilation_h, "x", g.dilation_w, ", padding ", g.pad_h, "x",
                  g.pad_w, "): the output would be ", P, "x", Q);
  return {x.size(0), x.size(1), P, Q};
}

/** Checks a backward's grad_output against the forward input's shape and, when given, the expected output shape. */
void check_backward(const char* op, const Tensor& gy, const Shape& x_shape) {
  check_dtype(op, "grad_output", gy, DType::Float32);
  DDP4J_CHECK_ARG(gy.dim() == 4, op, ": grad_output must be 4-D, got shape ", shape_str(gy.shape()));
  DDP4J_CHECK_ARG(x_shape.size() == 4 && x_shape[0] == gy.size(0) && x_shape[1] == gy.size(1), op, ": input shape ",
                  shape_str(x_shape), " does not match grad_output ", shape_str(gy.shape()));
  for (int64_t s : x_shape) DDP4J_CHECK_ARG(s >= 0, op, ": invalid input shape ", shape_str(x_shape));
}

}  // namespace

int64_t pool2d_output_size(int64_t size, int kernel, int stride, int pad, int dilation, bool ceil_mode) {
  const int64_t numerator = size + 2 * int64_t{pad} - int64_t{dilation} * (kernel - 1) - 1 + (ceil_mode ? stride - 1 : 0);
  int64_t out = div_floor(numerator, stride) + 1;
  // Ceil mode: the last window must start inside the input or its left padding.
  if (ceil_mode && (out - 1) * stride >= size + pad) --out;
  return out;
}

std::vector<Tensor> max_pool2d_forward(const Tensor& x, const kernels::Pool2dGeometry& g) {
  const Shape y_shape = pooled_shape("max_pool2d", x, g);
  Tensor y = Tensor::empty(y_shape, DType::Float32, x.device());
  Tensor indices = Tensor::empty(y_shape, DType::Int64, x.device());
  static KernelSlot slot("max_pool2d_forward");
  slot.get<kernels::max_pool2d_forward_fn>(x.device())(x, y, indices, g);
  return {y, indices};
}

Tensor max_pool2d_backward(const Tensor& gy, const Tensor& indices, const Shape& x_shape) {
  constexpr const char* op = "max_pool2d_backward";
  check_backward(op, gy, x_shape);
  check_dtype(op, "indices", indices, DType::Int64);
  check_same_device(op, gy, indices);
  DDP4J_CHECK_ARG(gy.shape() == indices.shape(), op, ": grad_output ", shape_str(gy.shape()), " and indices ",
                  shape_str(indices.shape()), " must have the same 4-D shape");
  Tensor gx = Tensor::empty(x_shape, DType::Float32, gy.device());
  static KernelSlot slot("max_pool2d_backward");
  slot.get<kernels::max_pool2d_backward_fn>(gy.device())(gy, indices, gx);
  return gx;
}

Tensor avg_pool2d_forward(const Tensor& x, const kernels::Pool2dGeometry& g, bool count_include_pad,
                          int64_t divisor_override) {
  constexpr const char* op = "avg_pool2d";
  DDP4J_CHECK_ARG(g.dilation_h == 1 && g.dilation_w == 1, op, ": has no dilation (got ", g.dilation_h, "x",
                  g.dilation_w, ")");
  DDP4J_CHECK_ARG(divisor_override >= 0, op, ": divisor_override must be positive (or 0 for none), got ",
                  divisor_override);
  const Shape y_shape = pooled_shape(op, x, g);
  Tensor y = Tensor::empty(y_shape, DType::Float32, x.device());
  static KernelSlot slot("avg_pool2d_forward");
  slot.get<kernels::avg_pool2d_forward_fn>(x.device())(x, y, g, count_include_pad, divisor_override);
  return y;
}

Tensor avg_pool2d_backward(const Tensor& gy, const Shape& x_shape, const kernels::Pool2dGeometry& g,
                           bool count_include_pad, int64_t divisor_override) {
  constexpr const char* op = "avg_pool2d_backward";
  check_backward(op, gy, x_shape);
  check_geometry(op, g);
  DDP4J_CHECK_ARG(g.dilation_h == 1 && g.dilation_w == 1 && divisor_override >= 0, op,
                  ": dilation must be 1 and divisor_override >= 0");
  const int64_t P = pool2d_output_size(x_shape[2], g.kernel_h, g.stride_h, g.pad_h, 1, g.ceil_mode);
  const int64_t Q = pool2d_output_size(x_shape[3], g.kernel_w, g.stride_w, g.pad_w, 1, g.ceil_mode);
  DDP4J_CHECK_ARG(gy.size(2) == P && gy.size(3) == Q, op, ": grad_output ", shape_str(gy.shape()),
                  " is not the pooled shape of input ", shape_str(x_shape), " (", P, "x", Q, ")");
  Tensor gx = Tensor::empty(x_shape, DType::Float32, gy.device());
  static KernelSlot slot("avg_pool2d_backward");
  slot.get<kernels::avg_pool2d_backward_fn>(gy.device())(gy, gx, g, count_include_pad, divisor_override);
  return gx;
}

Tensor adaptive_avg_pool2d_forward(const Tensor& x, int64_t out_h, int64_t out_w) {
  constexpr const char* op = "adaptive_avg_pool2d";
  check_dtype(op, "input", x, DType::Float32);
  DDP4J_CHECK_ARG(x.dim() == 4, op, ": input must be 4-D [N, C, H, W], got shape ", shape_str(x.shape()));
  DDP4J_CHECK_ARG(out_h >= 1 && out_w >= 1, op, ": output size must be positive, got ", out_h, "x", out_w);
  // As PyTorch: every window must hold at least one element.
  DDP4J_CHECK_ARG(x.size(2) >= 1 && x.size(3) >= 1, op, ": input ", shape_str(x.shape()),
                  " has an empty plane; expected non-zero height and width");
  Tensor y = Tensor::empty({x.size(0), x.size(1), out_h, out_w}, DType::Float32, x.device());
  static KernelSlot slot("adaptive_avg_pool2d_forward");
  slot.get<kernels::adaptive_avg_pool2d_forward_fn>(x.device())(x, y);
  return y;
}

Tensor adaptive_avg_pool2d_backward(const Tensor& gy, const Shape& x_shape) {
  constexpr const char* op = "adaptive_avg_pool2d_backward";
  check_backward(op, gy, x_shape);
  DDP4J_CHECK_ARG(gy.size(2) >= 1 && gy.size(3) >= 1 && x_shape[2] >= 1 && x_shape[3] >= 1, op, ": grad_output ",
                  shape_str(gy.shape()), " and input ", shape_str(x_shape), " need non-empty planes");
  Tensor gx = Tensor::empty(x_shape, DType::Float32, gy.device());
  static KernelSlot slot("adaptive_avg_pool2d_backward");
  slot.get<kernels::adaptive_avg_pool2d_backward_fn>(gy.device())(gy, gx);
  return gx;
}

}  // namespace ddp4j::ops
