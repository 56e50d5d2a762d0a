// CUDA kernel of the unary family: element-wise functions of one tensor, one thread per element
// (grid-stride), the same float32 expressions as src/cpu/unary.cpp. exp, log, tanh and pow are
// CUDA's float functions (within 2 ulp of the C library's); the rest are bit-equal to the CPU.
// Their backwards are compositions of these and the broadcast ops (done in Java's autograd).
#include "cuda/cuda_context.h"
#include "cuda/kernels/indexing.cuh"
#include "ddp4j/dispatch.h"
#include "ddp4j/kernels.h"

namespace ddp4j::cuda {
namespace {

using kernels::UnaryOp;

constexpr int kThreads = 256;

/** The float functions, Pow's special exponents (PyTorch's pow_tensor_scalar) as separate codes. */
enum class FloatFn : int { Exp, Log, Tanh, Sqrt, Neg, Add, Mul, Div, Square, Cube, Reciprocal, Pow };

__device__ __forceinline__ float apply(FloatFn f, float v, float s) {
  switch (f) {
    case FloatFn::Exp: return expf(v);
    case FloatFn::Log: return logf(v);
    case FloatFn::Tanh: return tanhf(v);
    case FloatFn::Sqrt: return sqrtf(v);
    case FloatFn::Neg: return -v;
    case FloatFn::Add: return v + s;
    case FloatFn::Mul: return v * s;
    case FloatFn::Div: return v / s;
    case FloatFn::Square: return v * v;
    case FloatFn::Cube: return v * v * v;
    case FloatFn::Reciprocal: return 1.0f / v;
    default: return powf(v, s);
  }
}

__global__ void float_kernel(const float* x, FloatFn f, float s, float* out, int64_t n) {
  DDP4J_GRID_LOOP(i, n) out[i] = apply(f, x[i], s);
}

__global__ void logical_not_kernel(const uint8_t* x, uint8_t* out, int64_t n) {
  DDP4J_GRID_LOOP(i, n) out[i] = static_cast<uint8_t>(x[i] == 0);
}

FloatFn float_fn(UnaryOp op, double scalar) {
  switch (op) {
    case UnaryOp::Exp: return FloatFn::Exp;
    case UnaryOp::Log: return FloatFn::Log;
    case UnaryOp::Tanh: return FloatFn::Tanh;
    case UnaryOp::Sqrt: return FloatFn::Sqrt;
    case UnaryOp::Neg: return FloatFn::Neg;
    case UnaryOp::AddScalar: return FloatFn::Add;
    case UnaryOp::MulScalar: return FloatFn::Mul;
    case UnaryOp::DivScalar: return FloatFn::Div;
    case UnaryOp::Pow:
      if (scalar == 2) return FloatFn::Square;
      if (scalar == 3) return FloatFn::Cube;
      if (scalar == 0.5) return FloatFn::Sqrt;
      if (scalar == -1) return FloatFn::Reciprocal;
      return FloatFn::Pow;
    default: break;
  }
  throw Error(ErrorKind::InvalidArgument, "unary: unknown op code");
}

void unary(const Tensor& x, UnaryOp op, double scalar, Tensor& out) {
  const int64_t n = x.numel();
  if (op != UnaryOp::LogicalNot) float_fn(op, scalar);  // unknown codes throw before the launch
  if (n == 0) return;
  LaunchContext ctx(out);
  if (op == UnaryOp::LogicalNot) {
    logical_not_kernel<<<grid_for(n, kThreads), kThreads, 0, ctx.stream>>>(x.data<uint8_t>(), out.data<uint8_t>(), n);
  } else {
    float_kernel<<<grid_for(n, kThreads), kThreads, 0, ctx.stream>>>(x.data<float>(), float_fn(op, scalar),
                                                                     static_cast<float>(scalar), out.data<float>(), n);
  }
  DDP4J_CUDA_CHECK_LAUNCH("unary");
}

}  // namespace

DDP4J_REGISTER_KERNEL(unary, CUDA, unary);

}  // namespace ddp4j::cuda
