// CUDA elementwise kernels: fill (float32 and int64), copy (device to device), add, mul, scale,
// relu forward and backward. Grid-stride loops over the flat elements (cuda::grid_for caps the
// grid), scalar loads (tensors may be flat slices, so 16-byte alignment is not guaranteed). Each
// thread reads its elements before writing them, so out may alias an input (add_, scale_).
// Semantics as the CPU kernels in src/cpu/elementwise.cpp and src/cpu/linear.cpp.
#include "cuda/cuda_context.h"
#include "ddp4j/dispatch.h"
#include "ddp4j/kernels.h"

namespace ddp4j::cuda {
namespace {

constexpr int kThreads = 256;

template <typename T>
__global__ void fill_kernel(T* p, int64_t n, T value) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) p[i] = value;
}

__global__ void add_kernel(const float* a, const float* b, float alpha, float* out, int64_t n) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    out[i] = a[i] + alpha * b[i];
  }
}

__global__ void mul_kernel(const float* a, const float* b, float* out, int64_t n) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    out[i] = a[i] * b[i];
  }
}

__global__ void scale_kernel(const float* a, float s, float* out, int64_t n) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    out[i] = a[i] * s;
  }
}

__global__ void relu_forward_kernel(const float* x, float* y, int64_t n) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const float v = x[i];
    y[i] = (v > 0.0f || v != v) ? v : 0.0f;  // NaN propagates, as PyTorch
  }
}

__global__ void relu_backward_kernel(const float* gy, const float* y, float* gx, int64_t n) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    gx[i] = y[i] > 0.0f ? gy[i] : 0.0f;  // threshold_backward: passes where the output is > 0
  }
}

/** t[:] = value; float32 or int64 (bfloat16 and float16 are refused by name). */
void fill(Tensor& t, double value) {
  DDP4J_CHECK_ARG(t.dtype() == DType::Float32 || t.dtype() == DType::Int64, "fill of ", dtype_name(t.dtype()),
                  " on ", t.device().str(), " is not supported yet: fill a CPU tensor and copy it with to(device)");
  const int64_t n = t.numel();
  if (n == 0) return;
  LaunchContext ctx(t);
  if (t.dtype() == DType::Float32) {
    fill_kernel<float><<<grid_for(n, kThreads), kThreads, 0, ctx.stream>>>(t.data<float>(), n,
                                                                           static_cast<float>(value));
  } else {
    fill_kernel<int64_t><<<grid_for(n, kThreads), kThreads, 0, ctx.stream>>>(t.data<int64_t>(), n,
                                                                             static_cast<int64_t>(value));
  }
  DDP4J_CUDA_CHECK_LAUNCH("fill");
}

/** dst[:] = src[:] on one device (any dtype): an asynchronous copy on the compute stream. */
void copy(const Tensor& src, Tensor& dst) {
  if (src.nbytes() == 0 || src.raw_data() == dst.raw_data()) return;
  LaunchContext ctx(src);
  DDP4J_CUDA_CHECK(cudaMemcpyAsync(dst.raw_data(), src.raw_data(), src.nbytes(), cudaMemcpyDeviceToDevice, ctx.stream));
}

/** out = a + alpha * b; out may alias a. */
void add(const Tensor& a, const Tensor& b, float alpha, Tensor& out) {
  const int64_t n = a.numel();
  if (n == 0) return;
  LaunchContext ctx(a);
  add_kernel<<<grid_for(n, kThreads), kThreads, 0, ctx.stream>>>(a.data<float>(), b.data<float>(), alpha,
                                                                 out.data<float>(), n);
  DDP4J_CUDA_CHECK_LAUNCH("add");
}

/** out = a * b elementwise. */
void mul(const Tensor& a, const Tensor& b, Tensor& out) {
  const int64_t n = a.numel();
  if (n == 0) return;
  LaunchContext ctx(a);
  mul_kernel<<<grid_for(n, kThreads), kThreads, 0, ctx.stream>>>(a.data<float>(), b.data<float>(), out.data<float>(),
                                                                 n);
  DDP4J_CUDA_CHECK_LAUNCH("mul");
}

/** out = a * s; out may alias a. */
void scale(const Tensor& a, float s, Tensor& out) {
  const int64_t n = a.numel();
  if (n == 0) return;
  LaunchContext ctx(a);
  scale_kernel<<<grid_for(n, kThreads), kThreads, 0, ctx.stream>>>(a.data<float>(), s, out.data<float>(), n);
  DDP4J_CUDA_CHECK_LAUNCH("scale");
}

/** y = max(x, 0), NaN kept. */
void relu_forward(const Tensor& x, Tensor& y) {
  const int64_t n = x.numel();
  if (n == 0) return;
  LaunchContext ctx(x);
  relu_forward_kernel<<<grid_for(n, kThreads), kThreads, 0, ctx.stream>>>(x.data<float>(), y.data<float>(), n);
  DDP4J_CUDA_CHECK_LAUNCH("relu_forward");
}

/** gx = y > 0 ? gy : 0. */
void relu_backward(const Tensor& gy, const Tensor& y, Tensor& gx) {
  const int64_t n = y.numel();
  if (n == 0) return;
  LaunchContext ctx(y);
  relu_backward_kernel<<<grid_for(n, kThreads), kThreads, 0, ctx.stream>>>(gy.data<float>(), y.data<float>(),
                                                                           gx.data<float>(), n);
  DDP4J_CUDA_CHECK_LAUNCH("relu_backward");
}

}  // namespace

DDP4J_REGISTER_KERNEL(fill, CUDA, fill);
DDP4J_REGISTER_KERNEL(copy, CUDA, copy);
DDP4J_REGISTER_KERNEL(add, CUDA, add);
DDP4J_REGISTER_KERNEL(mul, CUDA, mul);
DDP4J_REGISTER_KERNEL(scale, CUDA, scale);
DDP4J_REGISTER_KERNEL(relu_forward, CUDA, relu_forward);
DDP4J_REGISTER_KERNEL(relu_backward, CUDA, relu_backward);

}  // namespace ddp4j::cuda
