// CPU kernels for linear (GEMM through OpenBLAS) and ReLU. Inputs arrive validated and 2-D
// ([rows, in] / [out, in]); outputs are preallocated and overwritten.
#include <cblas.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "ddp4j/dispatch.h"
#include "ddp4j/kernels.h"

namespace ddp4j::cpu {
namespace {

void linear_forward(const Tensor& x, const Tensor& w, const Tensor& b, Tensor& y) {
  const int64_t rows = x.size(0), in = x.size(1), out = w.size(0);
  float* py = y.data<float>();
  if (rows == 0 || out == 0) return;
  // Seed y with the bias (or zeros) so one GEMM with beta = 1 adds x·wᵀ on top: a single pass over y.
  if (b.defined()) {
    const float* pb = b.data<float>();
    for (int64_t r = 0; r < rows; ++r) std::memcpy(py + r * out, pb, static_cast<size_t>(out) * sizeof(float));
  } else {
    std::fill_n(py, rows * out, 0.0f);
  }
  if (in == 0) return;  // empty reduction: BLAS rejects leading dimensions of 0
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<blasint>(rows), static_cast<blasint>(out),
              static_cast<blasint>(in), 1.0f, x.data<float>(), static_cast<blasint>(in), w.data<float>(),
              static_cast<blasint>(in), 1.0f, py, static_cast<blasint>(out));
}

void linear_backward(const Tensor& gy, const Tensor& x, const Tensor& w, Tensor& gx, Tensor& gw, Tensor& gb) {
  const int64_t rows = x.size(0), in = x.size(1), out = w.size(0);
  const float* pgy = gy.data<float>();
  // gx[rows, in] = gy[rows, out] · w[out, in]
  if (gx.defined()) {
    if (rows > 0 && in > 0) {
      if (out == 0) {
        std::fill_n(gx.data<float>(), rows * in, 0.0f);
      } else {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<blasint>(rows), static_cast<blasint>(in),
                    static_cast<blasint>(out), 1.0f, pgy, static_cast<blasint>(out), w.data<float>(),
                    static_cast<blasint>(in), 0.0f, gx.data<float>(), static_cast<blasint>(in));
      }
    }
  }
  // gw[out, in] = gyᵀ[out, rows] · x[rows, in]
  if (out > 0 && in > 0) {
    if (rows == 0) {
      std::fill_n(gw.data<float>(), out * in, 0.0f);
    } else {
      cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, static_cast<blasint>(out), static_cast<blasint>(in),
                  static_cast<blasint>(rows), 1.0f, pgy, static_cast<blasint>(out), x.data<float>(),
                  static_cast<blasint>(in), 0.0f, gw.data<float>(), static_cast<blasint>(in));
    }
  }
  // gb[out] = column sums of gy, accumulated in double (batch sums can be long).
  if (gb.defined()) {
    std::vector<double> acc(static_cast<size_t>(out), 0.0);
    for (int64_t r = 0; r < rows; ++r) {
      const float* row = pgy + r * out;
      for (int64_t o = 0; o < out; ++o) acc[o] += row[o];
    }
    float* pgb = gb.data<float>();
    for (int64_t o = 0; o < out; ++o) pgb[o] = static_cast<float>(acc[o]);
  }
}

void relu_forward(const Tensor& x, Tensor& y) {
  const float* px = x.data<float>();
  float* py = y.data<float>();
  const int64_t n = x.numel();
  // x > 0 ? x : 0 keeps NaN as 0 like std::max would not; PyTorch propagates NaN, so test for NaN explicitly.
  for (int64_t i = 0; i < n; ++i) py[i] = (px[i] > 0.0f || px[i] != px[i]) ? px[i] : 0.0f;
}

void relu_backward(const Tensor& gy, const Tensor& y, Tensor& gx) {
  const float* pgy = gy.data<float>();
  const float* py = y.data<float>();
  float* pgx = gx.data<float>();
  const int64_t n = y.numel();
  // PyTorch's threshold_backward: the gradient passes where the output is strictly positive.
  for (int64_t i = 0; i < n; ++i) pgx[i] = py[i] > 0.0f ? pgy[i] : 0.0f;
}

}  // namespace

DDP4J_REGISTER_KERNEL(linear_forward, CPU, linear_forward);
DDP4J_REGISTER_KERNEL(linear_backward, CPU, linear_backward);
DDP4J_REGISTER_KERNEL(relu_forward, CPU, relu_forward);
DDP4J_REGISTER_KERNEL(relu_backward, CPU, relu_backward);

}  // namespace ddp4j::cpu
