// CUDA torch.optim.SGD update, in place, one thread per element (grid-stride): the same float32
// steps and float coefficients as src/cpu/sgd.cpp, so results match PyTorch to rounding.
#include "cuda/cuda_context.h"
#include "ddp4j/dispatch.h"
#include "ddp4j/kernels.h"

namespace ddp4j::cuda {
namespace {

constexpr int kThreads = 256;

struct SgdCoefficients {
  float wd, neg_lr, mom, keep;
  bool nesterov, first;
};

__global__ void sgd_plain_kernel(float* p, const float* g, int64_t n, SgdCoefficients k) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const float d = k.wd != 0.0f ? g[i] + k.wd * p[i] : g[i];
    p[i] += k.neg_lr * d;
  }
}

__global__ void sgd_momentum_kernel(float* p, const float* g, float* buf, int64_t n, SgdCoefficients k) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const float d = k.wd != 0.0f ? g[i] + k.wd * p[i] : g[i];
    // The first step copies the gradient into the buffer (no dampening), as torch.clone(d_p).
    const float b = k.first ? d : buf[i] * k.mom + k.keep * d;
    buf[i] = b;
    const float step = k.nesterov ? d + k.mom * b : b;
    p[i] += k.neg_lr * step;
  }
}

/** One SGD step on param (in place); momentum_buf is read and written when momentum != 0. */
void sgd_step(Tensor& param, const Tensor& grad, Tensor& momentum_buf, const kernels::SgdOptions& o, bool first) {
  const int64_t n = param.numel();
  if (n == 0) return;
  LaunchContext ctx(param);
  const SgdCoefficients k{static_cast<float>(o.weight_decay), static_cast<float>(-o.lr),
                          static_cast<float>(o.momentum), static_cast<float>(1.0 - o.dampening), o.nesterov, first};
  if (o.momentum == 0) {
    sgd_plain_kernel<<<grid_for(n, kThreads), kThreads, 0, ctx.stream>>>(param.data<float>(), grad.data<float>(), n,
                                                                         k);
  } else {
    sgd_momentum_kernel<<<grid_for(n, kThreads), kThreads, 0, ctx.stream>>>(
        param.data<float>(), grad.data<float>(), momentum_buf.data<float>(), n, k);
  }
  DDP4J_CUDA_CHECK_LAUNCH("sgd_step");
}

}  // namespace

DDP4J_REGISTER_KERNEL(sgd_step, CUDA, sgd_step);

}  // namespace ddp4j::cuda
