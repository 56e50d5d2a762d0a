// Linear and ReLU ops: argument checks, output allocation, dispatch to the device kernels.
// linear accepts x of shape [*, in] like torch.nn.functional.linear; the kernels see 2-D views
// [rows, in] (views share storage, so this costs nothing).
#include "ddp4j/dispatch.h"
#include "ddp4j/ops.h"

namespace ddp4j::ops {
namespace {

/** Product of all sizes but the last: the number of rows a [*, in] tensor holds. */
int64_t leading_rows(const Tensor& t) {
  int64_t rows = 1;
  for (int d = 0; d + 1 < t.dim(); ++d) rows *= t.shape()[d];
  return rows;
}

/** Checks x [*, in], w [out, in], b [out] (b may be undefined). */
void check_linear_args(const char* op, const Tensor& x, const Tensor& w, const Tensor& b) {
  check_dtype(op, "input", x, DType::Float32);
  check_dtype(op, "weight", w, DType::Float32);
  DDP4J_CHECK_ARG(x.dim() >= 1, op, ": input must have at least 1 dimension [*, in_features], got shape ",
                  shape_str(x.shape()));
  check_dim(op, "weight", w, 2);
  check_same_device(op, x, w);
  DDP4J_CHECK_ARG(x.size(-1) == w.size(1), op, ": input ", shape_str(x.shape()), " has ", x.size(-1),
                  " features but weight ", shape_str(w.shape()), " expects ", w.size(1));
  if (b.defined()) {
    check_dtype(op, "bias", b, DType::Float32);
    check_same_device(op, x, b);
    DDP4J_CHECK_ARG(b.dim() == 1 && b.size(0) == w.size(0), op, ": bias ", shape_str(b.shape()),
                    " does not match weight ", shape_str(w.shape()), " (expected [", w.size(0), "])");
  }
}

/** x's shape with the last size replaced by out. */
Shape with_last(const Shape& s, int64_t out) {
  Shape r = s;
  r.back() = out;
  return r;
}

}  // namespace

Tensor linear_forward(const Tensor& x, const Tensor& w, const Tensor& b) {
  return linear_forward(x, w, b, DType::Float32);
}

Tensor linear_forward(const Tensor& x, const Tensor& w, const Tensor& b, DType compute) {
  check_linear_args("linear", x, w, b);
  check_autocast_dtype("linear", compute);
  const int64_t rows = leading_rows(x), in = w.size(1), out = w.size(0);
  Tensor y = Tensor::empty(with_last(x.shape(), out), DType::Float32, x.device());
  Tensor y2 = y.view({rows, out});
  if (compute != DType::Float32 && x.device().type == DeviceType::CPU) {
    static KernelSlot autocast_slot("linear_forward_autocast");
    autocast_slot.get<kernels::linear_forward_autocast_fn>(x.device())(x.view({rows, in}), w, b, y2, compute);
    return y;
  }
  // Other devices: the float32 kernel on operands rounded here.
  const Tensor xr = compute == DType::Float32 ? x : round_to_low_precision(x, compute);
  const Tensor wr = compute == DType::Float32 ? w : round_to_low_precision(w, compute);
  static KernelSlot slot("linear_forward");
  slot.get<kernels::linear_forward_fn>(x.device())(xr.view({rows, in}), wr, b, y2);
  return y;
}

std::vector<Tensor> linear_backward(const Tensor& gy, const Tensor& x, const Tensor& w, bool need_gx,
                                    bool has_bias) {
  return linear_backward(gy, x, w, need_gx, has_bias, DType::Float32);
}

std::vector<Tensor> linear_backward(const Tensor& gy, const Tensor& x, const Tensor& w, bool need_gx,
                                    bool has_bias, DType compute) {
  check_linear_args("linear_backward", x, w, Tensor());
  check_autocast_dtype("linear_backward", compute);
  check_dtype("linear_backward", "grad_output", gy, DType::Float32);
  check_same_device("linear_backward", gy, x);
  const Shape expected = with_last(x.shape(), w.size(0));
  DDP4J_CHECK_ARG(gy.shape() == expected, "linear_backward: grad_output ", shape_str(gy.shape()),
                  " does not match the output shape ", shape_str(expected), " of input ", shape_str(x.shape()),
                  " and weight ", shape_str(w.shape()));
  const int64_t rows = leading_rows(x), in = w.size(1), out = w.size(0);
  Tensor gx = need_gx ? Tensor::empty(x.shape(), DType::Float32, x.device()) : Tensor();
  Tensor gw = Tensor::empty(w.shape(), DType::Float32, w.device());
  Tensor gb = has_bias ? Tensor::empty({out}, DType::Float32, w.device()) : Tensor();
  Tensor gx2 = need_gx ? gx.view({rows, in}) : Tensor();
  if (compute != DType::Float32 && x.device().type == DeviceType::CPU) {
    static KernelSlot autocast_slot("linear_backward_autocast");
    autocast_slot.get<kernels::linear_backward_autocast_fn>(x.device())(gy.view({rows, out}), x.view({rows, in}), w,
                                                                      gx2, gw, gb, compute);
    return {gx, gw, gb};
  }
  // Here gb sums the rounded gy (PyTorch too sums its bfloat16 gy); the CPU kernel sums the float32 one.
  const Tensor gyr = compute == DType::Float32 ? gy : round_to_low_precision(gy, compute);
  const Tensor xr = compute == DType::Float32 ? x : round_to_low_precision(x, compute);
  const Tensor wr = compute == DType::Float32 ? w : round_to_low_precision(w, compute);
  static KernelSlot slot("linear_backward");
  slot.get<kernels::linear_backward_fn>(x.device())(gyr.view({rows, out}), xr.view({rows, in}), wr, gx2, gw, gb);
  return {gx, gw, gb};
}

Tensor relu_forward(const Tensor& x) {
  check_dtype("relu", "input", x, DType::Float32);
  Tensor y = Tensor::empty(x.shape(), DType::Float32, x.device());
  static KernelSlot slot("relu_forward");
  slot.get<kernels::relu_forward_fn>(x.device())(x, y);
  return y;
}

Tensor relu_backward(const Tensor& gy, const Tensor& y) {
  check_dtype("relu_backward", "grad_output", gy, DType::Float32);
  check_dtype("relu_backward", "output", y, DType::Float32);
  check_same_device("relu_backward", gy, y);
  DDP4J_CHECK_ARG(gy.shape() == y.shape(), "relu_backward: grad_output ", shape_str(gy.shape()),
                  " does not match output ", shape_str(y.shape()));
  Tensor gx = Tensor::empty(y.shape(), DType::Float32, y.device());
  static KernelSlot slot("relu_backward");
  slot.get<kernels::relu_backward_fn>(y.device())(gy, y, gx);
  return gx;
}

}  // namespace ddp4j::ops
