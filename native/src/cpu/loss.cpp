// CPU kernels for MSE and cross-entropy losses (mean reduction). Sums accumulate in double; the
// cross entropy is a fused, max-subtracted log-softmax, so logits of ±1e4 stay finite. Rows and
// elements are split among the intra-op threads; the means add fixed blocks (of kGrainSize
// elements) in order, so they do not depend on the thread count.
#include <algorithm>
#include <cmath>

#include "ddp4j/dispatch.h"
#include "ddp4j/kernels.h"
#include "ddp4j/parallel.h"

namespace ddp4j::cpu {
namespace {

void mse_loss_forward(const Tensor& input, const Tensor& target, Tensor& out) {
  const float* pi = input.data<float>();
  const float* pt = target.data<float>();
  const int64_t n = input.numel();
  const double acc = parallel_reduce_blocks(0, n, kGrainSize, [=](int64_t lo, int64_t hi) {
    double s = 0;
    for (int64_t i = lo; i < hi; ++i) {
      const double d = static_cast<double>(pi[i]) - pt[i];
      s += d * d;
    }
    return s;
  });
  // n == 0 gives NaN, as torch.nn.functional.mse_loss does for empty inputs.
  *out.data<float>() = static_cast<float>(acc / static_cast<double>(n));
}

void mse_loss_backward(const Tensor& gout, const Tensor& input, const Tensor& target, Tensor& ginput) {
  const float* pi = input.data<float>();
  const float* pt = target.data<float>();
  float* pg = ginput.data<float>();
  const int64_t n = input.numel();
  const float s = static_cast<float>(2.0 * *gout.data<float>() / static_cast<double>(n));
  parallel_for(0, n, kGrainSize, [=](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) pg[i] = s * (pi[i] - pt[i]);
  });
}

/** Rows of `classes` logits that make about kGrainSize elements: the cross entropy's block of rows. */
int64_t rows_per_block(int64_t classes) { return std::max<int64_t>(1, kGrainSize / std::max<int64_t>(classes, 1)); }

/** Throws InvalidArgument naming the first target outside [0, classes). */
void check_targets(const char* op, const Tensor& target, int64_t classes) {
  const int64_t* pt = target.data<int64_t>();
  const int64_t n = target.numel();
  for (int64_t i = 0; i < n; ++i) {
    DDP4J_CHECK_ARG(pt[i] >= 0 && pt[i] < classes, op, ": target ", pt[i], " at index ", i,
                    " is out of range for ", classes, " classes (C = ", classes, "; valid targets are 0 to ",
                    classes - 1, ")");
  }
}

void cross_entropy_forward(const Tensor& logits, const Tensor& target, Tensor& out, Tensor& probs) {
  const int64_t rows = logits.size(0), classes = logits.size(1);
  check_targets("cross_entropy", target, classes);
  const float* px = logits.data<float>();
  const int64_t* pt = target.data<int64_t>();
  float* pp = probs.data<float>();
  const double total = parallel_reduce_blocks(0, rows, rows_per_block(classes), [=](int64_t r0, int64_t r1) {
    double part = 0;
    for (int64_t r = r0; r < r1; ++r) {
      const float* x = px + r * classes;
      float* p = pp + r * classes;
      float m = x[0];
      for (int64_t c = 1; c < classes; ++c) m = x[c] > m ? x[c] : m;
      // exp(x - m) <= 1, so nothing overflows; the sum is >= 1 so its log is finite.
      double sum = 0;
      for (int64_t c = 0; c < classes; ++c) {
        const float e = std::exp(x[c] - m);
        p[c] = e;
        sum += e;
      }
      const float inv = static_cast<float>(1.0 / sum);
      for (int64_t c = 0; c < classes; ++c) p[c] *= inv;
      // -log_softmax[t] = log(sum) - (x[t] - m), formed in double so huge logits cancel exactly.
      part += std::log(sum) - (static_cast<double>(x[pt[r]]) - m);
    }
    return part;
  });
  *out.data<float>() = static_cast<float>(total / static_cast<double>(rows));
}

void cross_entropy_backward(const Tensor& gout, const Tensor& probs, const Tensor& target, Tensor& glogits) {
  const int64_t rows = probs.size(0), classes = probs.size(1);
  check_targets("cross_entropy_backward", target, classes);  // guards the one-hot write below
  const float* pp = probs.data<float>();
  const int64_t* pt = target.data<int64_t>();
  float* pg = glogits.data<float>();
  const float s = static_cast<float>(*gout.data<float>() / static_cast<double>(rows));
  parallel_for(0, rows, rows_per_block(classes), [=](int64_t r0, int64_t r1) {
    for (int64_t i = r0 * classes; i < r1 * classes; ++i) pg[i] = s * pp[i];
    for (int64_t r = r0; r < r1; ++r) pg[r * classes + pt[r]] = s * (pp[r * classes + pt[r]] - 1.0f);
  });
}

}  // namespace

DDP4J_REGISTER_KERNEL(mse_loss_forward, CPU, mse_loss_forward);
DDP4J_REGISTER_KERNEL(mse_loss_backward, CPU, mse_loss_backward);
DDP4J_REGISTER_KERNEL(cross_entropy_forward, CPU, cross_entropy_forward);
DDP4J_REGISTER_KERNEL(cross_entropy_backward, CPU, cross_entropy_backward);

}  // namespace ddp4j::cpu
