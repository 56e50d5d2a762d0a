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

/**
 * Checks x [*, in], w [out, in] (linear) or [in, out] (addmm's mat2: w_in_out), b [out] (b may be
 * undefined).
 */
void check_linear_args(const char* op, const Tensor& x, const Tensor& w, const Tensor& b, bool w_in_out) {
  check_dtype(op, "input", x, DType::Float32);
  check_dtype(op, "weight", w, DType::Float32);
  DDP4J_CHECK_ARG(x.dim() >= 1, op, ": input must have at least 1 dimension [*, in_features], got shape ",
                  shape_str(x.shape()));
  check_dim(op, "weight", w, 2);
  check_same_device(op, x, w);
  const int in_dim = w_in_out ? 0 : 1;
  DDP4J_CHECK_ARG(x.size(-1) == w.size(in_dim), op, ": input ", shape_str(x.shape()), " has ", x.size(-1),
                  " features but weight ", shape_str(w.shape()), " expects ", w.size(in_dim));
  if (b.defined()) {
    check_dtype(op, "bias", b, DType::Float32);
    check_same_device(op, x, b);
    DDP4J_CHECK_ARG(b.dim() == 1 && b.size(0) == w.size(1 - in_dim), op, ": bias ", shape_str(b.shape()),
                    " does not match weight ", shape_str(w.shape()), " (expected [", w.size(1 - in_dim), "])");
  }
}

/** x's shape with the last size replaced by out. */
Shape with_last(const Shape& s, int64_t out) {
  Shape r = s;
  r.back() = out;
  return r;
}

Tensor forward(const char* op, const Tensor& x, const Tensor& w, const Tensor& b, DType compute, bool w_in_out) {
  check_linear_args(op, x, w, b, w_in_out);
  check_autocast_dtype(op, compute);
  const int64_t rows = leading_rows(x), in = x.size(-1), out = w.size(w_in_out ? 1 : 0);
  Tensor y = Tensor::empty(with_last(x.shape(), out), DType::Float32, x.device());
  Tensor y2 = y.view({rows, out});
  if ((compute != DType::Float32 || w_in_out) && x.device().type == DeviceType::CPU) {
    static KernelSlot autocast_slot("linear_forward_autocast");
    autocast_slot.get<kernels::linear_forward_autocast_fn>(x.device())(x.view({rows, in}), w, b, y2, compute,
                                                                     w_in_out);
    return y;
  }
  // Other devices: the float32 kernel on operands rounded (and a weight [in, out] transposed) here.
  const Tensor xr = compute == DType::Float32 ? x : round_to_low_precision(x, compute);
  const Tensor wt = w_in_out ? transpose(w, 0, 1) : w;
  const Tensor wr = compute == DType::Float32 ? wt : round_to_low_precision(wt, compute);
  static KernelSlot slot("linear_forward");
  slot.get<kernels::linear_forward_fn>(x.device())(xr.view({rows, in}), wr, b, y2);
  return y;
}

std::vector<Tensor> backward(const char* op, const Tensor& gy, const Tensor& x, const Tensor& w, bool need_gx,
                             bool has_bias, DType compute, bool w_in_out) {
  check_linear_args(op, x, w, Tensor(), w_in_out);
  check_autocast_dtype(op, compute);
  check_dtype(op, "grad_output", gy, DType::Float32);
  check_same_device(op, gy, x);
  const int64_t rows = leading_rows(x), in = x.size(-1), out = w.size(w_in_out ? 1 : 0);
  const Shape expected = with_last(x.shape(), out);
  DDP4J_CHECK_ARG(gy.shape() == expected, op, ": grad_output ", shape_str(gy.shape()),
                  " does not match the output shape ", shape_str(expected), " of input ", shape_str(x.shape()),
                  " and weight ", shape_str(w.shape()));
  Tensor gx = need_gx ? Tensor::empty(x.shape(), DType::Float32, x.device()) : Tensor();
  Tensor gw = Tensor::empty(w.shape(), DType::Float32, w.device());
  Tensor gb = has_bias ? Tensor::empty({out}, DType::Float32, w.device()) : Tensor();
  Tensor gx2 = need_gx ? gx.view({rows, in}) : Tensor();
  if ((compute != DType::Float32 || w_in_out) && x.device().type == DeviceType::CPU) {
    static KernelSlot autocast_slot("linear_backward_autocast");
    autocast_slot.get<kernels::linear_backward_autocast_fn>(x.device())(gy.view({rows, out}), x.view({rows, in}), w,
                                                                      gx2, gw, gb, compute, w_in_out);
    return {gx, gw, gb};
  }
  // Here gb sums the rounded gy (PyTorch too sums its bfloat16 gy); the CPU kernel sums the float32 one.
  const Tensor gyr = compute == DType::Float32 ? gy : round_to_low_precision(gy, compute);
  const Tensor xr = compute == DType::Float32 ? x : round_to_low_precision(x, compute);
  const Tensor wt = w_in_out ? transpose(w, 0, 1) : w;
  const Tensor wr = compute == DType::Float32 ? wt : round_to_low_precision(wt, compute);
  Tensor gwt = w_in_out ? Tensor::empty({out, in}, DType::Float32, w.device()) : gw;
  static KernelSlot slot("linear_backward");
  slot.get<kernels::linear_backward_fn>(x.device())(gyr.view({rows, out}), xr.view({rows, in}), wr, gx2, gwt, gb);
  return {gx, w_in_out ? transpose(gwt, 0, 1) : gw, gb};
}

}  // namespace

Tensor linear_forward(const Tensor& x, const Tensor& w, const Tensor& b) {
  return forward("linear", x, w, b, DType::Float32, false);
}

Tensor linear_forward(const Tensor& x, const Tensor& w, const Tensor& b, DType compute) {
  return forward("linear", x, w, b, compute, false);
}

std::vector<Tensor> linear_backward(const Tensor& gy, const Tensor& x, const Tensor& w, bool need_gx,
                                    bool has_bias) {
  return backward("linear_backward", gy, x, w, need_gx, has_bias, DType::Float32, false);
}

std::vector<Tensor> linear_backward(const Tensor& gy, const Tensor& x, const Tensor& w, bool need_gx,
                                    bool has_bias, DType compute) {
  return backward("linear_backward", gy, x, w, need_gx, has_bias, compute, false);
}

Tensor addmm_forward(const Tensor& b, const Tensor& x, const Tensor& w, DType compute) {
  return forward("addmm", x, w, b, compute, true);
}

std::vector<Tensor> addmm_backward(const Tensor& gy, const Tensor& x, const Tensor& w, bool need_gx, bool has_bias,
                                   DType compute) {
  return backward("addmm_backward", gy, x, w, need_gx, has_bias, compute, true);
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
