// CUDA linear layer: y = x · wᵀ + b and its gradients as SGEMMs (gemm.cuh); the bias gradient is
// a column sum in double (reduce.cuh). Same contract as src/cpu/linear.cpp.
#include "cuda/cuda_context.h"
#include "cuda/kernels/gemm.cuh"
#include "cuda/kernels/reduce.cuh"
#include "ddp4j/dispatch.h"
#include "ddp4j/kernels.h"

namespace ddp4j::cuda {
namespace {

/** x[rows, in], w[out, in], b[out] or undefined -> y[rows, out] (overwritten). */
void linear_forward(const Tensor& x, const Tensor& w, const Tensor& b, Tensor& y) {
  const int64_t rows = x.size(0), in = x.size(1), out = w.size(0);
  if (rows == 0 || out == 0) return;
  LaunchContext ctx(y);
  GemmArgs g;
  g.M = static_cast<int>(rows);
  g.N = static_cast<int>(out);
  g.K = static_cast<int>(in);
  DDP4J_CHECK_ARG(rows <= 0x7fffff00 && out <= 0x7fffff00 && in <= 0x7fffff00, "linear: sizes too large");
  g.A = x.data<float>();
  g.lda = in;
  g.B = w.data<float>();  // B(k, n) = w[n, k]
  g.ldb = in;
  g.trans_b = true;
  g.C = y.data<float>();
  g.ldc = out;
  if (b.defined()) {
    g.bias = b.data<float>();
    g.bias_mode = GemmBias::PerColumn;
  }
  sgemm(g, ctx.stream, "linear_forward");
}

/** gx = gy · w, gw = gyᵀ · x, gb = Σ_rows gy; gx and gb may be undefined. All overwritten. */
void linear_backward(const Tensor& gy, const Tensor& x, const Tensor& w, Tensor& gx, Tensor& gw, Tensor& gb) {
  const int64_t rows = x.size(0), in = x.size(1), out = w.size(0);
  DDP4J_CHECK_ARG(rows <= 0x7fffff00 && out <= 0x7fffff00 && in <= 0x7fffff00, "linear_backward: sizes too large");
  LaunchContext ctx(gw);
  if (gx.defined() && rows > 0 && in > 0) {
    GemmArgs g;  // gx[rows, in] = gy[rows, out] · w[out, in]; out == 0 gives zeros
    g.M = static_cast<int>(rows);
    g.N = static_cast<int>(in);
    g.K = static_cast<int>(out);
    g.A = gy.data<float>();
    g.lda = out;
    g.B = w.data<float>();
    g.ldb = in;
    g.C = gx.data<float>();
    g.ldc = in;
    sgemm(g, ctx.stream, "linear_backward (input gradient)");
  }
  if (out > 0 && in > 0) {
    GemmArgs g;  // gw[out, in] = gyᵀ[out, rows] · x[rows, in]; rows == 0 gives zeros
    g.M = static_cast<int>(out);
    g.N = static_cast<int>(in);
    g.K = static_cast<int>(rows);
    g.A = gy.data<float>();  // A(m, k) = gy[k, m]
    g.lda = out;
    g.trans_a = true;
    g.B = x.data<float>();
    g.ldb = in;
    g.C = gw.data<float>();
    g.ldc = in;
    sgemm(g, ctx.stream, "linear_backward (weight gradient)");
  }
  if (gb.defined() && out > 0) {
    channel_sums(rows > 0 ? gy.data<float>() : nullptr, rows, out, 1, gb.data<float>(), ctx.device, ctx.stream,
                 "linear_backward (bias gradient)");
  }
}

}  // namespace

DDP4J_REGISTER_KERNEL(linear_forward, CUDA, linear_forward);
DDP4J_REGISTER_KERNEL(linear_backward, CUDA, linear_backward);

}  // namespace ddp4j::cuda
