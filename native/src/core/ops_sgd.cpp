// The SGD update op: validates hyper-parameters as torch.optim.SGD does and the tensors' dtypes,
// shapes and devices, then runs the device kernel in place.
#include "ddp4j/dispatch.h"
#include "ddp4j/ops.h"

namespace ddp4j::ops {

void sgd_step_(Tensor& param, const Tensor& grad, Tensor& momentum_buf, const kernels::SgdOptions& o, bool first) {
  DDP4J_CHECK_ARG(o.lr >= 0, "sgd: invalid learning rate: ", o.lr);
  DDP4J_CHECK_ARG(o.momentum >= 0, "sgd: invalid momentum value: ", o.momentum);
  DDP4J_CHECK_ARG(o.weight_decay >= 0, "sgd: invalid weight_decay value: ", o.weight_decay);
  DDP4J_CHECK_ARG(!o.nesterov || (o.momentum > 0 && o.dampening == 0),
                  "sgd: nesterov momentum requires a momentum and zero dampening");
  check_dtype("sgd", "param", param, DType::Float32);
  check_dtype("sgd", "grad", grad, DType::Float32);
  check_same_device("sgd", param, grad);
  DDP4J_CHECK_ARG(param.shape() == grad.shape(), "sgd: param ", shape_str(param.shape()), " and grad ",
                  shape_str(grad.shape()), " must have the same shape");
  if (o.momentum != 0) {
    DDP4J_CHECK_ARG(momentum_buf.defined(), "sgd: momentum ", o.momentum, " needs a momentum buffer for param ",
                    shape_str(param.shape()));
    check_dtype("sgd", "momentum_buffer", momentum_buf, DType::Float32);
    check_same_device("sgd", param, momentum_buf);
    DDP4J_CHECK_ARG(param.shape() == momentum_buf.shape(), "sgd: param ", shape_str(param.shape()),
                    " and momentum_buffer ", shape_str(momentum_buf.shape()), " must have the same shape");
  }
  static KernelSlot slot("sgd_step");
  slot.get<kernels::sgd_step_fn>(param.device())(param, grad, momentum_buf, o, first);
}

}  // namespace ddp4j::ops
