// CUDA MaxPool2d (any dilation; ceil mode only sets the output size), as src/cpu/max_pool.cpp:
// the forward takes the first maximum of each window (padding counts as -inf; NaN wins and propagates) and saves its
// flat h*W+w index within the plane (int64); the backward scatter-adds gy into gx at those
// indices.
#include "cuda/cuda_context.h"
#include "ddp4j/dispatch.h"
#include "ddp4j/kernels.h"

namespace ddp4j::cuda {
namespace {

constexpr int kThreads = 256;

struct PoolDims {
  int64_t H, W, P, Q;
  int kh, kw, sh, sw, ph, pw, dh, dw;
};

/**
 * One thread per output element (grid-stride over planes * P * Q). The flat output index is split
 * with I arithmetic: 32-bit when the tensor is small enough (64-bit division is slow on GPUs).
 */
template <typename I>
__global__ void __launch_bounds__(kThreads) forward_kernel(const float* x, PoolDims d, int64_t total, float* y,
                                                           int64_t* indices) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t o = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; o < total; o += stride) {
    const I oi = static_cast<I>(o), Q = static_cast<I>(d.Q), P = static_cast<I>(d.P);
    const int64_t q = oi % Q;
    const I t = oi / Q;
    const int64_t p = t % P;
    const int64_t plane = t / P;
    // PyTorch's window: taps every dilation step, the start moved past the padding by whole steps.
    int64_t h0 = p * d.sh - d.ph, w0 = q * d.sw - d.pw;
    const int64_t h1 = min(h0 + int64_t{d.kh - 1} * d.dh + 1, d.H), w1 = min(w0 + int64_t{d.kw - 1} * d.dw + 1, d.W);
    while (h0 < 0) h0 += d.dh;
    while (w0 < 0) w0 += d.dw;
    const float* in = x + plane * d.H * d.W;
    float best = -INFINITY;
    int64_t best_index = h0 * d.W + w0;
    for (int64_t h = h0; h < h1; h += d.dh) {
      for (int64_t w = w0; w < w1; w += d.dw) {
        const float v = in[h * d.W + w];
        if (v > best || v != v) {
          best = v;
          best_index = h * d.W + w;
        }
      }
    }
    y[o] = best;
    indices[o] = best_index;
  }
}

/**
 * gx[plane, idx] += gy[plane, j] with idx = indices[plane, j]. Windows may overlap (stride <
 * kernel), so the adds are atomic; with the usual non-overlapping windows every address gets at
 * most one add and the result is exact. An index outside the plane (indices come from Java) is
 * skipped, never written; the CPU kernel throws for it instead.
 */
__global__ void __launch_bounds__(kThreads) backward_kernel(const float* gy, const int64_t* indices, int64_t PQ,
                                                            int64_t HW, int64_t total, float* gx) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t o = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; o < total; o += stride) {
    const int64_t idx = indices[o];
    if (idx < 0 || idx >= HW) continue;
    atomicAdd(gx + (o / PQ) * HW + idx, gy[o]);
  }
}

/** y[N, C, P, Q] and indices (int64, same shape) = max and argmax over each window of x[N, C, H, W]. */
void forward(const Tensor& x, Tensor& y, Tensor& indices, const kernels::Pool2dGeometry& g) {
  const int64_t total = y.numel();
  if (total == 0) return;
  LaunchContext ctx(x);
  const PoolDims d{x.size(2), x.size(3), y.size(2), y.size(3), g.kernel_h, g.kernel_w, g.stride_h, g.stride_w,
                   g.pad_h, g.pad_w, g.dilation_h, g.dilation_w};
  const unsigned blocks = grid_for(total, kThreads);
  if (total <= 0xffffffffLL) {
    forward_kernel<uint32_t><<<blocks, kThreads, 0, ctx.stream>>>(x.data<float>(), d, total, y.data<float>(),
                                                                  indices.data<int64_t>());
  } else {
    forward_kernel<int64_t><<<blocks, kThreads, 0, ctx.stream>>>(x.data<float>(), d, total, y.data<float>(),
                                                                 indices.data<int64_t>());
  }
  DDP4J_CUDA_CHECK_LAUNCH("max_pool2d");
}

/** gx (overwritten) = scatter-add of gy into the saved argmax positions. */
void backward(const Tensor& gy, const Tensor& indices, Tensor& gx) {
  if (gx.numel() == 0) return;
  LaunchContext ctx(gx);
  DDP4J_CUDA_CHECK(cudaMemsetAsync(gx.raw_data(), 0, gx.nbytes(), ctx.stream));  // all-zero bits is 0.0f
  const int64_t total = gy.numel();
  if (total == 0) return;
  const int64_t PQ = gy.size(2) * gy.size(3), HW = gx.size(2) * gx.size(3);
  backward_kernel<<<grid_for(total, kThreads), kThreads, 0, ctx.stream>>>(gy.data<float>(), indices.data<int64_t>(),
                                                                          PQ, HW, total, gx.data<float>());
  DDP4J_CUDA_CHECK_LAUNCH("max_pool2d_backward");
}

}  // namespace

DDP4J_REGISTER_KERNEL(max_pool2d_forward, CUDA, forward);
DDP4J_REGISTER_KERNEL(max_pool2d_backward, CUDA, backward);

}  // namespace ddp4j::cuda
