// CPU kernels for linear (GEMM through OpenBLAS, on fixed blocks over the intra-op threads, see
// cpu/gemm.h) and ReLU. Inputs arrive validated and 2-D ([rows, in] / [out, in], or [in, out] for
// addmm's weight: the GEMMs read either layout in place through BLAS's transpose flags); outputs are
// preallocated and overwritten.
#include <algorithm>
#include <cstring>
#include <vector>

#include "cpu/gemm.h"
#include "ddp4j/dispatch.h"
#include "ddp4j/kernels.h"
#include "ddp4j/parallel.h"

namespace ddp4j::cpu {
namespace {

void linear_forward_autocast(const Tensor& x, const Tensor& w, const Tensor& b, Tensor& y, DType compute,
                             bool w_in_out) {
  const int64_t rows = x.size(0), in = x.size(1), out = y.size(1);
  float* py = y.data<float>();
  if (rows == 0 || out == 0) return;
  // Seed y with the bias (or zeros) so one GEMM with beta = 1 adds x·w on top: a single pass over y.
  const float* pb = b.defined() ? b.data<float>() : nullptr;
  parallel_for(0, rows, std::max<int64_t>(1, kGrainSize / out), [=](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      if (pb != nullptr) {
        std::memcpy(py + r * out, pb, static_cast<size_t>(out) * sizeof(float));
      } else {
        std::fill_n(py + r * out, out, 0.0f);
      }
    }
  });
  if (in == 0) return;
  // w [out, in]: y = x · wᵀ; w [in, out]: y = x · w
  gemm(compute, false, !w_in_out, rows, out, in, 1.0f, x.data<float>(), in, w.data<float>(), w_in_out ? out : in, 1.0f,
       py, out);
}

void linear_forward(const Tensor& x, const Tensor& w, const Tensor& b, Tensor& y) {
  linear_forward_autocast(x, w, b, y, DType::Float32, false);
}

void linear_backward_autocast(const Tensor& gy, const Tensor& x, const Tensor& w, Tensor& gx, Tensor& gw, Tensor& gb,
                              DType compute, bool w_in_out) {
  const int64_t rows = x.size(0), in = x.size(1), out = gy.size(1);
  const float* pgy = gy.data<float>();
  const float* pw = w.data<float>();
  const float* px = x.data<float>();
  if (!w_in_out) {
    // gx[rows, in] = gy[rows, out] · w[out, in] (all zeros when out == 0)
    if (gx.defined()) gemm(compute, false, false, rows, in, out, 1.0f, pgy, out, pw, in, 0.0f, gx.data<float>(), in);
    // gw[out, in] = gyᵀ[out, rows] · x[rows, in]: each element one call's sum over all rows
    gemm(compute, true, false, out, in, rows, 1.0f, pgy, out, px, in, 0.0f, gw.data<float>(), in);
  } else {
    // gx[rows, in] = gy[rows, out] · wᵀ (w [in, out])
    if (gx.defined()) gemm(compute, false, true, rows, in, out, 1.0f, pgy, out, pw, out, 0.0f, gx.data<float>(), in);
    // gw[in, out] = xᵀ[in, rows] · gy[rows, out]
    gemm(compute, true, false, in, out, rows, 1.0f, px, in, pgy, out, 0.0f, gw.data<float>(), out);
  }
  // gb[out] = column sums of gy, accumulated in double (batch sums can be long). Each thread takes
  // a range of columns and adds every column's rows in row order, whatever the split.
  if (gb.defined()) {
    float* pgb = gb.data<float>();
    parallel_for(0, out, std::max<int64_t>(1, kGrainSize / std::max<int64_t>(rows, 1)), [=](int64_t o0, int64_t o1) {
      std::vector<double> acc(static_cast<size_t>(o1 - o0), 0.0);
      for (int64_t r = 0; r < rows; ++r) {
        const float* row = pgy + r * out;
        for (int64_t o = o0; o < o1; ++o) acc[static_cast<size_t>(o - o0)] += row[o];
      }
      for (int64_t o = o0; o < o1; ++o) pgb[o] = static_cast<float>(acc[static_cast<size_t>(o - o0)]);
    });
  }
}

void linear_backward(const Tensor& gy, const Tensor& x, const Tensor& w, Tensor& gx, Tensor& gw, Tensor& gb) {
  linear_backward_autocast(gy, x, w, gx, gw, gb, DType::Float32, false);
}

void relu_forward(const Tensor& x, Tensor& y) {
  const float* px = x.data<float>();
  float* py = y.data<float>();
  // x > 0 ? x : 0 keeps NaN as 0 like std::max would not; PyTorch propagates NaN, so test for NaN explicitly.
  parallel_for(0, x.numel(), kGrainSize, [=](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) py[i] = (px[i] > 0.0f || px[i] != px[i]) ? px[i] : 0.0f;
  });
}

void relu_backward(const Tensor& gy, const Tensor& y, Tensor& gx) {
  const float* pgy = gy.data<float>();
  const float* py = y.data<float>();
  float* pgx = gx.data<float>();
  // PyTorch's threshold_backward: the gradient passes where the output is strictly positive.
  parallel_for(0, y.numel(), kGrainSize, [=](int64_t lo, int64_t hi) {
    // gy loaded before the select, so the loop vectorises instead of branching per element.
    for (int64_t i = lo; i < hi; ++i) {
      const float g = pgy[i];
      pgx[i] = py[i] > 0.0f ? g : 0.0f;
    }
  });
}

}  // namespace

DDP4J_REGISTER_KERNEL(linear_forward, CPU, linear_forward);
DDP4J_REGISTER_KERNEL(linear_backward, CPU, linear_backward);
DDP4J_REGISTER_KERNEL(linear_forward_autocast, CPU, linear_forward_autocast);
DDP4J_REGISTER_KERNEL(linear_backward_autocast, CPU, linear_backward_autocast);
DDP4J_REGISTER_KERNEL(relu_forward, CPU, relu_forward);
DDP4J_REGISTER_KERNEL(relu_backward, CPU, relu_backward);

}  // namespace ddp4j::cpu
