// The Adam / AdamW update op: validates hyper-parameters as torch.optim.Adam does and the tensors'
// dtypes, shapes and devices, then runs the device kernel in place.
#include <cmath>

#include "ddp4j/dispatch.h"
#include "ddp4j/ops.h"

namespace ddp4j::ops {
namespace {

void check_state(const char* what, const Tensor& param, const Tensor& t) {
  DDP4J_CHECK_ARG(t.defined(), "adam: missing ", what, " for param ", shape_str(param.shape()));
  check_dtype("adam", what, t, DType::Float32);
  check_same_device("adam", param, t);
  DDP4J_CHECK_ARG(param.shape() == t.shape(), "adam: param ", shape_str(param.shape()), " and ", what, " ",
                  shape_str(t.shape()), " must have the same shape");
}

void check_options(const kernels::AdamOptions& o) {
  DDP4J_CHECK_ARG(o.lr >= 0, "adam: invalid learning rate: ", o.lr);
  DDP4J_CHECK_ARG(o.eps >= 0, "adam: invalid epsilon value: ", o.eps);
  DDP4J_CHECK_ARG(o.beta1 >= 0 && o.beta1 < 1, "adam: invalid beta parameter at index 0: ", o.beta1);
  DDP4J_CHECK_ARG(o.beta2 >= 0 && o.beta2 < 1, "adam: invalid beta parameter at index 1: ", o.beta2);
  DDP4J_CHECK_ARG(o.weight_decay >= 0, "adam: invalid weight_decay value: ", o.weight_decay);
}

void check_tensors(const Tensor& param, const Tensor& grad, const Tensor& exp_avg, const Tensor& exp_avg_sq,
                   const Tensor* max_exp_avg_sq, const kernels::AdamOptions& o, int64_t step) {
  DDP4J_CHECK_ARG(step >= 1, "adam: step must be at least 1 (the first update is step 1), got ", step);
  check_dtype("adam", "param", param, DType::Float32);
  check_state("grad", param, grad);
  check_state("exp_avg", param, exp_avg);
  check_state("exp_avg_sq", param, exp_avg_sq);
  if (o.amsgrad) check_state("max_exp_avg_sq", param, max_exp_avg_sq ? *max_exp_avg_sq : Tensor());
}

}  // namespace

void adam_step_(Tensor& param, const Tensor& grad, Tensor& exp_avg, Tensor& exp_avg_sq, Tensor& max_exp_avg_sq,
                const kernels::AdamOptions& o, int64_t step) {
  check_options(o);
  check_tensors(param, grad, exp_avg, exp_avg_sq, &max_exp_avg_sq, o, step);
  static KernelSlot slot("adam_step");
  slot.get<kernels::adam_step_fn>(param.device())(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, o, step);
}

void adam_steps_(std::vector<kernels::AdamTensors>& group, const kernels::AdamOptions& o) {
  check_options(o);
  for (auto& t : group) {
    check_tensors(*t.param, *t.grad, *t.exp_avg, *t.exp_avg_sq, t.max_exp_avg_sq, o, t.step);
    check_same_device("adam", *group.front().param, *t.param);
    if (!o.amsgrad) t.max_exp_avg_sq = nullptr;
  }
  if (group.empty()) return;
  const Device device = group.front().param->device();
  if (device.type != DeviceType::CPU) {  // the device's per-tensor kernel, once per parameter
    Tensor absent;
    for (auto& t : group) {
      adam_step_(*t.param, *t.grad, *t.exp_avg, *t.exp_avg_sq, t.max_exp_avg_sq ? *t.max_exp_avg_sq : absent, o,
                 t.step);
    }
    return;
  }
  static KernelSlot slot("adam_steps");
  slot.get<kernels::adam_steps_fn>(device)(group, o);
}

}  // namespace ddp4j::ops
