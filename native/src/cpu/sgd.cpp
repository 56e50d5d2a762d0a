// CPU kernel for one torch.optim.SGD update, in place. Follows _single_tensor_sgd step by step in
// float32 with float coefficients, so results match PyTorch to rounding. Element ranges are split
// among the intra-op threads (each element's update is independent of the others).
#include "ddp4j/dispatch.h"
#include "ddp4j/kernels.h"
#include "ddp4j/parallel.h"

namespace ddp4j::cpu {
namespace {

void sgd_step(Tensor& param, const Tensor& grad, Tensor& momentum_buf, const kernels::SgdOptions& o, bool first) {
  float* p = param.data<float>();
  const float* g = grad.data<float>();
  const int64_t n = param.numel();
  const float wd = static_cast<float>(o.weight_decay);
  const float neg_lr = static_cast<float>(-o.lr);
  if (o.momentum == 0) {
    parallel_for(0, n, kGrainSize, [=](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) {
        const float d = wd != 0.0f ? g[i] + wd * p[i] : g[i];
        p[i] += neg_lr * d;
      }
    });
    return;
  }
  float* buf = momentum_buf.data<float>();
  const float mom = static_cast<float>(o.momentum);
  const float keep = static_cast<float>(1.0 - o.dampening);
  const bool nesterov = o.nesterov;
  parallel_for(0, n, kGrainSize, [=](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) {
      const float d = wd != 0.0f ? g[i] + wd * p[i] : g[i];
      // The first step copies the gradient into the buffer (no dampening), as torch.clone(d_p).
      const float b = first ? d : buf[i] * mom + keep * d;
      buf[i] = b;
      const float step = nesterov ? d + mom * b : b;
      p[i] += neg_lr * step;
    }
  });
}

}  // namespace

DDP4J_REGISTER_KERNEL(sgd_step, CPU, sgd_step);

}  // namespace ddp4j::cpu
