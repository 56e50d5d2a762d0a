// Loss ops (mean reduction, as PyTorch's default): argument checks, output allocation, dispatch.
// Target values of cross entropy live on the tensor's device, so the kernel checks their range.
#include "ddp4j/dispatch.h"
#include "ddp4j/ops.h"

namespace ddp4j::ops {
namespace {

void check_scalar_grad(const char* op, const Tensor& gout, const Tensor& like) {
  check_dtype(op, "grad_output", gout, DType::Float32);
  check_same_device(op, gout, like);
  DDP4J_CHECK_ARG(gout.numel() == 1, op, ": grad_output of a mean loss must have one element, got shape ",
                  shape_str(gout.shape()));
}

/** logits [N, C] float32, target [N] int64, same device. */
void check_cross_entropy_args(const char* op, const char* logits_name, const Tensor& logits, const Tensor& target) {
  check_dtype(op, logits_name, logits, DType::Float32);
  DDP4J_CHECK_ARG(logits.dim() == 2, op, ": ", logits_name, " must be [N, C] (2 dimensions), got shape ",
                  shape_str(logits.shape()));
  DDP4J_CHECK_ARG(target.dtype() == DType::Int64, op, ": target must be int64 class indices, got ",
                  target.describe());
  DDP4J_CHECK_ARG(target.dim() == 1 && target.size(0) == logits.size(0), op, ": ", logits_name, " ",
                  shape_str(logits.shape()), " has ", logits.size(0), " rows but target ", shape_str(target.shape()),
                  " must be [", logits.size(0), "]");
  check_same_device(op, logits, target);
}

}  // namespace

Tensor mse_loss_forward(const Tensor& input, const Tensor& target) {
  check_dtype("mse_loss", "input", input, DType::Float32);
  check_dtype("mse_loss", "target", target, DType::Float32);
  check_same_device("mse_loss", input, target);
  DDP4J_CHECK_ARG(input.shape() == target.shape(), "mse_loss: input ", shape_str(input.shape()),
                  " and target ", shape_str(target.shape()), " must have the same shape");
  Tensor out = Tensor::empty({}, DType::Float32, input.device());
  static KernelSlot slot("mse_loss_forward");
  slot.get<kernels::mse_loss_forward_fn>(input.device())(input, target, out);
  return out;
}

Tensor mse_loss_backward(const Tensor& gout, const Tensor& input, const Tensor& target) {
  check_dtype("mse_loss_backward", "input", input, DType::Float32);
  check_dtype("mse_loss_backward", "target", target, DType::Float32);
  check_same_device("mse_loss_backward", input, target);
  DDP4J_CHECK_ARG(input.shape() == target.shape(), "mse_loss_backward: input ", shape_str(input.shape()),
                  " and target ", shape_str(target.shape()), " must have the same shape");
  check_scalar_grad("mse_loss_backward", gout, input);
  Tensor ginput = Tensor::empty(input.shape(), DType::Float32, input.device());
  static KernelSlot slot("mse_loss_backward");
  slot.get<kernels::mse_loss_backward_fn>(input.device())(gout, input, target, ginput);
  return ginput;
}

std::vector<Tensor> cross_entropy_forward(const Tensor& logits, const Tensor& target) {
  check_cross_entropy_args("cross_entropy", "input", logits, target);
  DDP4J_CHECK_ARG(logits.size(1) > 0, "cross_entropy: input ", shape_str(logits.shape()), " has no classes");
  Tensor out = Tensor::empty({}, DType::Float32, logits.device());
  Tensor probs = Tensor::empty(logits.shape(), DType::Float32, logits.device());
  static KernelSlot slot("cross_entropy_forward");
  slot.get<kernels::cross_entropy_forward_fn>(logits.device())(logits, target, out, probs);
  return {out, probs};
}

Tensor cross_entropy_backward(const Tensor& gout, const Tensor& probs, const Tensor& target) {
  check_cross_entropy_args("cross_entropy_backward", "probs", probs, target);
  check_scalar_grad("cross_entropy_backward", gout, probs);
  Tensor glogits = Tensor::empty(probs.shape(), DType::Float32, probs.device());
  static KernelSlot slot("cross_entropy_backward");
  slot.get<kernels::cross_entropy_backward_fn>(probs.device())(gout, probs, target, glogits);
  return glogits;
}

}  // namespace ddp4j::ops
