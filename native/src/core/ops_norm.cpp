// BatchNorm2d ops: argument checks (messages name the op and both shapes), output allocation, dispatch.
#include <cmath>

#include "ddp4j/dispatch.h"
#include "ddp4j/ops.h"

namespace ddp4j::ops {
namespace {

constexpr const char* kOp = "batch_norm2d";

void check_input(const char* op, const Tensor& x) {
  check_dtype(op, "input", x, DType::Float32);
  DDP4J_CHECK_ARG(x.dim() == 4, op, ": input must be 4-D [N, C, H, W], got shape ", shape_str(x.shape()));
}

void check_eps(double eps) {
  DDP4J_CHECK_ARG(eps >= 0 && std::isfinite(eps), kOp, ": eps must be a non-negative number, got ", eps);
}

/** The checks every batch-norm forward shares: input, the four per-channel tensors, eps. */
void check_forward_args(const char* op, const Tensor& x, const Tensor& gamma, const Tensor& beta,
                        const Tensor& running_mean, const Tensor& running_var, double eps) {
  check_input(op, x);
  check_channel_tensor(op, "weight", x, gamma);
  check_channel_tensor(op, "bias", x, beta);
  check_channel_tensor(op, "running_mean", x, running_mean);
  check_channel_tensor(op, "running_var", x, running_var);
  check_eps(eps);
}

/**
 * Training on an empty batch (N x H x W = 0), as PyTorch: an empty output, the running statistics
 * left alone (no kernel runs), and zero saved statistics and affine coefficients for the backward.
 * Returns {y, save_mean, save_invstd, affine}; affine only when `with_affine`.
 */
std::vector<Tensor> empty_batch_forward(const Tensor& x, bool with_affine) {
  const int64_t c = x.size(1);
  return {Tensor::empty(x.shape(), DType::Float32, x.device()), Tensor::zeros({c}, DType::Float32, x.device()),
          Tensor::zeros({c}, DType::Float32, x.device()),
          with_affine ? Tensor::zeros({2, c}, DType::Float32, x.device()) : Tensor()};
}

/** The gradients of an empty batch: an empty input gradient, zero weight and bias gradients. */
std::vector<Tensor> empty_batch_backward(const Tensor& x, bool want_masked) {
  const int64_t c = x.size(1);
  std::vector<Tensor> out{Tensor::empty(x.shape(), DType::Float32, x.device()),
                          Tensor::zeros({c}, DType::Float32, x.device()), Tensor::zeros({c}, DType::Float32, x.device())};
  if (want_masked) out.push_back(Tensor::empty(x.shape(), DType::Float32, x.device()));
  return out;
}

/**
 * The training forward's batch check, as PyTorch: exactly one value per channel is refused (its
 * unbiased variance is undefined), naming the fixes; returns whether the batch is empty (allowed).
 */
bool check_training_batch(const char* op, const Tensor& x) {
  DDP4J_CHECK_ARG(x.size(0) * x.size(2) * x.size(3) != 1, op,
                  ": expected more than 1 value per channel when training, got input ", shape_str(x.shape()),
                  " (batch x height x width per channel): give each rank a batch of at least 2, larger images (so that"
                  " the map is not 1x1 there), or run the model in eval() mode");
  return x.numel() == 0;
}

}  // namespace

std::vector<Tensor> batch_norm2d_forward_train(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                               Tensor& running_mean, Tensor& running_var, double momentum,
                                               double eps) {
  check_forward_args(kOp, x, gamma, beta, running_mean, running_var, eps);
  DDP4J_CHECK_ARG(std::isfinite(momentum), kOp, ": momentum must be a number, got ", momentum);
  if (check_training_batch(kOp, x)) return empty_batch_forward(x, x.device().type == DeviceType::CPU);
  const int64_t c = x.size(1);
  Tensor y = Tensor::empty(x.shape(), DType::Float32, x.device());
  Tensor save_mean = Tensor::empty({c}, DType::Float32, x.device());
  Tensor save_invstd = Tensor::empty({c}, DType::Float32, x.device());
  // Only the CPU kernels give the coefficients batch_norm2d_recompute needs.
  Tensor affine = x.device().type == DeviceType::CPU ? Tensor::empty({2, c}, DType::Float32, x.device()) : Tensor();
  static KernelSlot slot("batch_norm2d_forward_train");
  slot.get<kernels::batch_norm2d_forward_train_fn>(x.device())(x, gamma, beta, running_mean, running_var, momentum,
                                                               eps, y, save_mean, save_invstd, affine);
  return {y, save_mean, save_invstd, affine};
}

Tensor batch_norm2d_forward_eval(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                 const Tensor& running_mean, const Tensor& running_var, double eps) {
  check_forward_args(kOp, x, gamma, beta, running_mean, running_var, eps);
  Tensor y = Tensor::empty(x.shape(), DType::Float32, x.device());
  static KernelSlot slot("batch_norm2d_forward_eval");
  slot.get<kernels::batch_norm2d_forward_eval_fn>(x.device())(x, gamma, beta, running_mean, running_var, eps, y);
  return y;
}

std::vector<Tensor> batch_norm2d_backward(const Tensor& gy, const Tensor& x, const Tensor& gamma,
                                          const Tensor& save_mean, const Tensor& save_invstd) {
  constexpr const char* op = "batch_norm2d_backward";
  check_input(op, x);
  check_dtype(op, "grad_output", gy, DType::Float32);
  check_same_device(op, gy, x);
  DDP4J_CHECK_ARG(gy.shape() == x.shape(), op, ": grad_output ", shape_str(gy.shape()), " does not match input ",
                  shape_str(x.shape()));
  check_channel_tensor(op, "weight", x, gamma);
  check_channel_tensor(op, "save_mean", x, save_mean);
  check_channel_tensor(op, "save_invstd", x, save_invstd);
  if (x.numel() == 0) return empty_batch_backward(x, false);
  const int64_t c = x.size(1);
  Tensor gx = Tensor::empty(x.shape(), DType::Float32, x.device());
  Tensor ggamma = Tensor::empty({c}, DType::Float32, x.device());
  Tensor gbeta = Tensor::empty({c}, DType::Float32, x.device());
  static KernelSlot slot("batch_norm2d_backward");
  slot.get<kernels::batch_norm2d_backward_fn>(x.device())(gy, x, gamma, save_mean, save_invstd, gx, ggamma, gbeta);
  return {gx, ggamma, gbeta};
}

namespace {

/** A residual, when given, must be float32 of x's shape on x's device. */
void check_residual(const char* op, const Tensor& x, const Tensor& residual) {
  if (!residual.defined()) return;
  check_dtype(op, "residual", residual, DType::Float32);
  check_same_device(op, x, residual);
  DDP4J_CHECK_ARG(residual.shape() == x.shape(), op, ": residual ", shape_str(residual.shape()),
                  " does not match input ", shape_str(x.shape()));
}

}  // namespace

std::vector<Tensor> batch_norm2d_relu_forward_train(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                                    Tensor& running_mean, Tensor& running_var, double momentum,
                                                    double eps, const Tensor& residual) {
  constexpr const char* op = "batch_norm2d_relu";
  check_forward_args(op, x, gamma, beta, running_mean, running_var, eps);
  check_residual(op, x, residual);
  DDP4J_CHECK_ARG(std::isfinite(momentum), op, ": momentum must be a number, got ", momentum);
  if (check_training_batch(op, x)) return empty_batch_forward(x, true);
  const int64_t c = x.size(1);
  Tensor y = Tensor::empty(x.shape(), DType::Float32, x.device());
  Tensor save_mean = Tensor::empty({c}, DType::Float32, x.device());
  Tensor save_invstd = Tensor::empty({c}, DType::Float32, x.device());
  Tensor affine = Tensor::empty({2, c}, DType::Float32, x.device());
  static KernelSlot slot("batch_norm2d_relu_forward_train");
  slot.get<kernels::batch_norm2d_relu_forward_train_fn>(x.device())(x, gamma, beta, running_mean, running_var,
                                                                    momentum, eps, residual, y, save_mean,
                                                                    save_invstd, affine);
  return {y, save_mean, save_invstd, affine};
}

Tensor batch_norm2d_recompute(const Tensor& x, const Tensor& affine, const Tensor& residual, bool relu) {
  constexpr const char* op = "batch_norm2d_recompute";
  check_input(op, x);
  check_dtype(op, "affine", affine, DType::Float32);
  check_same_device(op, x, affine);
  DDP4J_CHECK_ARG(affine.shape() == Shape({2, x.size(1)}), op, ": affine must be [2, ", x.size(1), "] for input ",
                  shape_str(x.shape()), ", got ", shape_str(affine.shape()));
  DDP4J_CHECK_ARG(relu || !residual.defined(), op, ": a residual is added only before a ReLU (relu=true)");
  check_residual(op, x, residual);
  Tensor y = Tensor::empty(x.shape(), DType::Float32, x.device());
  if (x.numel() == 0) return y;
  static KernelSlot slot("batch_norm2d_recompute");
  slot.get<kernels::batch_norm2d_recompute_fn>(x.device())(x, affine, residual, relu, y);
  return y;
}

Tensor batch_norm2d_relu_forward_eval(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                      const Tensor& running_mean, const Tensor& running_var, double eps,
                                      const Tensor& residual) {
  constexpr const char* op = "batch_norm2d_relu";
  check_forward_args(op, x, gamma, beta, running_mean, running_var, eps);
  check_residual(op, x, residual);
  Tensor y = Tensor::empty(x.shape(), DType::Float32, x.device());
  static KernelSlot slot("batch_norm2d_relu_forward_eval");
  slot.get<kernels::batch_norm2d_relu_forward_eval_fn>(x.device())(x, gamma, beta, running_mean, running_var, eps,
                                                                   residual, y);
  return y;
}

std::vector<Tensor> batch_norm2d_relu_backward(const Tensor& gy, const Tensor& y, const Tensor& x, const Tensor& gamma,
                                               const Tensor& save_mean, const Tensor& save_invstd, bool want_masked,
                                               const Tensor& affine) {
  constexpr const char* op = "batch_norm2d_relu_backward";
  check_input(op, x);
  check_dtype(op, "grad_output", gy, DType::Float32);
  check_same_device(op, gy, x);
  DDP4J_CHECK_ARG(y.defined() != affine.defined(), op, ": give the output y or the forward's affine, not ",
                  y.defined() ? "both" : "neither");
  if (y.defined()) {
    check_dtype(op, "output", y, DType::Float32);
    check_same_device(op, y, x);
    DDP4J_CHECK_ARG(y.shape() == x.shape(), op, ": output ", shape_str(y.shape()), " must match input ",
                    shape_str(x.shape()));
  } else {
    check_dtype(op, "affine", affine, DType::Float32);
    check_same_device(op, affine, x);
    DDP4J_CHECK_ARG(affine.shape() == Shape({2, x.size(1)}), op, ": affine must be [2, ", x.size(1), "] for input ",
                    shape_str(x.shape()), ", got ", shape_str(affine.shape()));
  }
  DDP4J_CHECK_ARG(gy.shape() == x.shape(), op, ": grad_output ", shape_str(gy.shape()), " must match input ",
                  shape_str(x.shape()));
  check_channel_tensor(op, "weight", x, gamma);
  check_channel_tensor(op, "save_mean", x, save_mean);
  check_channel_tensor(op, "save_invstd", x, save_invstd);
  if (x.numel() == 0) return empty_batch_backward(x, want_masked);
  const int64_t c = x.size(1);
  Tensor gx = Tensor::empty(x.shape(), DType::Float32, x.device());
  Tensor ggamma = Tensor::empty({c}, DType::Float32, x.device());
  Tensor gbeta = Tensor::empty({c}, DType::Float32, x.device());
  Tensor gmasked = want_masked ? Tensor::empty(x.shape(), DType::Float32, x.device()) : Tensor();
  static KernelSlot slot("batch_norm2d_relu_backward");
  slot.get<kernels::batch_norm2d_relu_backward_fn>(x.device())(gy, y, x, gamma, save_mean, save_invstd, affine, gx,
                                                               ggamma, gbeta, gmasked);
  if (want_masked) return {gx, ggamma, gbeta, gmasked};
  return {gx, ggamma, gbeta};
}

}  // namespace ddp4j::ops
