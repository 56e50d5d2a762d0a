// Conv2d ops: argument checks (messages name the op and both shapes), output allocation, dispatch.
#include "ddp4j/dispatch.h"
#include "ddp4j/ops.h"

namespace ddp4j::ops {
namespace {

constexpr const char* kOp = "conv2d";

void check_geometry(const kernels::Conv2dGeometry& g) {
  DDP4J_CHECK_ARG(g.stride_h > 0 && g.stride_w > 0, kOp, ": stride must be positive, got (", g.stride_h, ", ",
                  g.stride_w, ")");
  DDP4J_CHECK_ARG(g.pad_h >= 0 && g.pad_w >= 0, kOp, ": padding must be non-negative, got (", g.pad_h, ", ",
                  g.pad_w, ")");
  DDP4J_CHECK_ARG(g.dilation_h > 0 && g.dilation_w > 0, kOp, ": dilation must be positive, got (", g.dilation_h,
                  ", ", g.dilation_w, ")");
  DDP4J_CHECK_ARG(g.groups > 0, kOp, ": groups must be positive, got ", g.groups);
}

/** Checks x, w, b against each other and returns the output shape [N, K, P, Q]. */
Shape check_conv_args(const Tensor& x, const Tensor& w, const Tensor& b, const kernels::Conv2dGeometry& g) {
  check_dtype(kOp, "input", x, DType::Float32);
  check_dtype(kOp, "weight", w, DType::Float32);
  DDP4J_CHECK_ARG(x.dim() == 4, kOp, ": input must be 4-D [N, C, H, W], got shape ", shape_str(x.shape()),
                  " (weight ", shape_str(w.shape()), ")");
  DDP4J_CHECK_ARG(w.dim() == 4, kOp, ": weight must be 4-D [out_channels, in_channels, kH, kW], got shape ",
                  shape_str(w.shape()));
  check_same_device(kOp, x, w);
  check_geometry(g);
  for (int d = 0; d < 4; ++d) {
    DDP4J_CHECK_ARG(w.size(d) > 0, kOp, ": weight ", shape_str(w.shape()), " has an empty dimension");
  }
  DDP4J_CHECK_ARG(w.size(0) % g.groups == 0, kOp, ": weight ", shape_str(w.shape()), " has ", w.size(0),
                  " output channels, not divisible by groups=", g.groups);
  DDP4J_CHECK_ARG(x.size(1) == w.size(1) * g.groups, kOp, ": input ", shape_str(x.shape()), " has ", x.size(1),
                  " channels but weight ", shape_str(w.shape()), " with groups=", g.groups, " expects ",
                  w.size(1) * g.groups, " (weight.size(1) * groups)");
  if (b.defined()) {
    check_dtype(kOp, "bias", b, DType::Float32);
    check_same_device(kOp, x, b);
    DDP4J_CHECK_ARG(b.dim() == 1 && b.size(0) == w.size(0), kOp, ": bias ", shape_str(b.shape()),
                    " does not match weight ", shape_str(w.shape()), " (expected [", w.size(0), "])");
  }
  const int64_t hp = x.size(2) + 2 * int64_t{g.pad_h}, wp = x.size(3) + 2 * int64_t{g.pad_w};
  // The window a dilated kernel spans: dilation * (k - 1) + 1.
  const int64_t kh = int64_t{g.dilation_h} * (w.size(2) - 1) + 1, kw = int64_t{g.dilation_w} * (w.size(3) - 1) + 1;
  DDP4J_CHECK_ARG(hp >= kh && wp >= kw, kOp, ": input ", shape_str(x.shape()), " padded to ", hp, "x", wp,
                  " is smaller than the ", kh, "x", kw, " window of weight ", shape_str(w.shape()), " (dilation (",
                  g.dilation_h, ", ", g.dilation_w, "))");
  const int64_t p = (hp - kh) / g.stride_h + 1, q = (wp - kw) / g.stride_w + 1;
  return {x.size(0), w.size(0), p, q};
}

/**
 * Autocast on a device whose conv kernels multiply in float32 only (all but the CPU, which rounds
 * while it packs): the ops layer rounds the operands.
 */
bool rounds_here(const Tensor& x, const kernels::Conv2dGeometry& g) {
  return g.compute != DType::Float32 && x.device().type != DeviceType::CPU;
}

}  // namespace

Tensor conv2d_forward(const Tensor& x, const Tensor& w, const Tensor& b, const kernels::Conv2dGeometry& g) {
  Shape y_shape = check_conv_args(x, w, b, g);
  check_autocast_dtype(kOp, g.compute);
  Tensor y = Tensor::empty(y_shape, DType::Float32, x.device());
  static KernelSlot slot("conv2d_forward");
  if (rounds_here(x, g)) {  // the device's float32 kernel on operands rounded here
    kernels::Conv2dGeometry g32 = g;
    g32.compute = DType::Float32;
    slot.get<kernels::conv2d_forward_fn>(x.device())(round_to_low_precision(x, g.compute),
                                                     round_to_low_precision(w, g.compute), b, y, g32);
    return y;
  }
  slot.get<kernels::conv2d_forward_fn>(x.device())(x, w, b, y, g);
  return y;
}

std::vector<Tensor> conv2d_backward(const Tensor& gy, const Tensor& x, const Tensor& w, bool need_gx, bool has_bias,
                                    const kernels::Conv2dGeometry& g) {
  static const Tensor no_bias;
  Shape y_shape = check_conv_args(x, w, no_bias, g);
  check_dtype("conv2d_backward", "grad_output", gy, DType::Float32);
  check_autocast_dtype("conv2d_backward", g.compute);
  check_same_device("conv2d_backward", gy, x);
  DDP4J_CHECK_ARG(gy.shape() == y_shape, "conv2d_backward: grad_output ", shape_str(gy.shape()),
                  " does not match the output shape ", shape_str(y_shape), " of input ", shape_str(x.shape()),
                  " and weight ", shape_str(w.shape()));
  Tensor gx = need_gx ? Tensor::empty(x.shape(), DType::Float32, x.device()) : Tensor();
  Tensor gw = Tensor::empty(w.shape(), DType::Float32, x.device());
  Tensor gb = has_bias ? Tensor::empty({w.size(0)}, DType::Float32, x.device()) : Tensor();
  static KernelSlot slot("conv2d_backward");
  if (rounds_here(x, g)) {
    kernels::Conv2dGeometry g32 = g;
    g32.compute = DType::Float32;
    slot.get<kernels::conv2d_backward_fn>(x.device())(round_to_low_precision(gy, g.compute),
                                                      round_to_low_precision(x, g.compute),
                                                      round_to_low_precision(w, g.compute), gx, gw, gb, g32);
    return {gx, gw, gb};
  }
  slot.get<kernels::conv2d_backward_fn>(x.device())(gy, x, w, gx, gw, gb, g);
  return {gx, gw, gb};
}

}  // namespace ddp4j::ops
