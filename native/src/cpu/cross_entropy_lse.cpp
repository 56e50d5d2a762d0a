// CPU cross entropy for large vocabularies: the forward keeps only each row's logsumexp (not the
// [N, C] probabilities), the backward recomputes softmax(x) = exp(x - lse) straight into the
// gradient. Rows are split among the threads; the loss adds fixed blocks of rows in order, so it
// does not depend on the thread count. The passes over a row (max, sum of exponentials, the
// gradient) run vectorised, the sum in 16 double lanes added in a fixed order. The head fused with
// its loss (linear_cross_entropy) makes the logits a block of rows at a time and turns each block
// into the gradients at once, so neither the [N, V] logits nor their gradient ever exist.
#include <algorithm>
#include <cmath>
#include <limits>

#include "cpu/gemm.h"
#include "cpu/vector_math.h"
#include "ddp4j/dispatch.h"
#include "ddp4j/errors.h"
#include "ddp4j/parallel.h"
#include "ddp4j/transformer_kernels.h"

namespace ddp4j::cpu {
namespace {

constexpr int kLanes = 16;

/** The largest of x[0..n), n >= 1 (NaN where x holds one, as PyTorch's logsumexp). */
DDP4J_VECTOR_CLONES float row_max(const float* x, int64_t n) {
  float lane[kLanes];
  std::fill(lane, lane + kLanes, x[0]);
  int64_t c = 0;
  for (; c + kLanes <= n; c += kLanes) {
    for (int i = 0; i < kLanes; ++i) lane[i] = x[c + i] > lane[i] || x[c + i] != x[c + i] ? x[c + i] : lane[i];
  }
  float m = x[0];
  for (int i = 0; i < kLanes; ++i) m = lane[i] > m || lane[i] != lane[i] ? lane[i] : m;
  for (; c < n; ++c) m = x[c] > m || x[c] != x[c] ? x[c] : m;
  return m;
}

/** The sum of exp(x[c] - m) over c < n, in double. */
DDP4J_VECTOR_CLONES double sum_exp(const float* x, int64_t n, float m) {
  double lane[kLanes] = {};
  int64_t c = 0;
  for (; c + kLanes <= n; c += kLanes) {
    for (int i = 0; i < kLanes; ++i) lane[i] += exp_approx(x[c + i] - m);
  }
  double sum = 0;
  for (int i = 0; i < kLanes; ++i) sum += lane[i];
  for (; c < n; ++c) sum += exp_approx(x[c] - m);
  return sum;
}

/** g[c] = s * exp(x[c] - l) for c < n: the softmax, scaled. */
DDP4J_VECTOR_CLONES void scaled_softmax(const float* x, int64_t n, float l, float s, float* g) {
  for (int64_t c = 0; c < n; ++c) g[c] = s * exp_approx(x[c] - l);
}

int64_t rows_per_block(int64_t classes) { return std::max<int64_t>(1, kGrainSize / std::max<int64_t>(classes, 1)); }

/** Throws InvalidArgument naming the first target outside [0, classes) that is not ignore_index; returns the count of the others. */
int64_t count_targets(const char* op, const Tensor& target, int64_t classes, int64_t ignore_index) {
  const int64_t* pt = target.data<int64_t>();
  int64_t count = 0;
  for (int64_t i = 0; i < target.numel(); ++i) {
    if (pt[i] == ignore_index) continue;
    DDP4J_CHECK_ARG(pt[i] >= 0 && pt[i] < classes, op, ": target ", pt[i], " at index ", i, " is out of range for ",
                    classes, " classes (valid targets are 0 to ", classes - 1, ", or ignore_index ", ignore_index,
                    ")");
    ++count;
  }
  return count;
}

void cross_entropy_lse_forward(const Tensor& logits, const Tensor& target, int64_t ignore_index, Tensor& out,
                               Tensor& lse) {
  const int64_t rows = logits.size(0), classes = logits.size(1);
  const int64_t count = count_targets("cross_entropy", target, classes, ignore_index);
  const float* px = logits.data<float>();
  const int64_t* pt = target.data<int64_t>();
  float* pl = lse.data<float>();
  const double total = parallel_reduce_blocks(0, rows, rows_per_block(classes), [=](int64_t r0, int64_t r1) {
    double part = 0;
    for (int64_t r = r0; r < r1; ++r) {
      const float* x = px + r * classes;
      const float m = row_max(x, classes);
      const double sum = sum_exp(x, classes, m);  // exp(x - m) <= 1: nothing overflows, and sum >= 1
      const double log_sum = std::log(sum);
      pl[r] = static_cast<float>(m + log_sum);
      // -log_softmax[t] = log(sum) - (x[t] - m), in double so that huge logits cancel exactly.
      if (pt[r] != ignore_index) part += log_sum - (static_cast<double>(x[pt[r]]) - m);
    }
    return part;
  });
  // Every target ignored: 0 / 0 = NaN, as PyTorch's mean.
  *out.data<float>() = count == 0 ? std::numeric_limits<float>::quiet_NaN()
                                  : static_cast<float>(total / static_cast<double>(count));
}

void cross_entropy_lse_backward(const Tensor& gout, const Tensor& logits, const Tensor& lse, const Tensor& target,
                                int64_t ignore_index, Tensor& glogits) {
  const int64_t rows = logits.size(0), classes = logits.size(1);
  const int64_t count = count_targets("cross_entropy_backward", target, classes, ignore_index);
  const float* px = logits.data<float>();
  const float* pl = lse.data<float>();
  const int64_t* pt = target.data<int64_t>();
  float* pg = glogits.data<float>();
  const float s = count == 0 ? 0.0f : static_cast<float>(*gout.data<float>() / static_cast<double>(count));
  parallel_for(0, rows, rows_per_block(classes), [=](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      float* g = pg + r * classes;
      if (pt[r] == ignore_index) {
        std::fill(g, g + classes, 0.0f);
        continue;
      }
      const float* x = px + r * classes;
      const float l = pl[r];
      scaled_softmax(x, classes, l, s, g);
      g[pt[r]] = s * (exp_approx(x[pt[r]] - l) - 1.0f);
    }
  });
}

constexpr int64_t kHeadRows = 256;  // rows of logits made at a time: 256 x 50257 floats is 51 MB

void linear_cross_entropy(const Tensor& h, const Tensor& w, const Tensor& target, int64_t ignore_index, DType compute,
                          Tensor& loss, Tensor& gh, Tensor& gw) {
  const int64_t rows = h.size(0), width = h.size(1), classes = w.size(0);
  const int64_t count = count_targets("linear_cross_entropy", target, classes, ignore_index);
  const float* ph = h.data<float>();
  const float* pw = w.data<float>();
  const int64_t* pt = target.data<int64_t>();
  const bool grads = gh.defined() || gw.defined();
  const float s = count == 0 ? 0.0f : static_cast<float>(1.0 / static_cast<double>(count));
  if (gw.defined() && (rows == 0 || width == 0)) std::fill_n(gw.data<float>(), gw.numel(), 0.0f);
  Tensor block = Tensor::empty({std::min(kHeadRows, std::max<int64_t>(rows, 1)), classes}, DType::Float32, h.device());
  float* logits = block.data<float>();
  double total = 0;
  for (int64_t r0 = 0; r0 < rows; r0 += kHeadRows) {
    const int64_t n = std::min(kHeadRows, rows - r0);
    gemm(compute, false, true, n, classes, width, 1.0f, ph + r0 * width, width, pw, width, 0.0f, logits, classes);
    // Each row: its loss term; then, in place, its gradient s * (softmax - onehot) (0 if ignored).
    total += parallel_reduce_blocks(0, n, rows_per_block(classes), [=](int64_t q0, int64_t q1) {
      double part = 0;
      for (int64_t q = q0; q < q1; ++q) {
        float* x = logits + q * classes;
        const int64_t t = pt[r0 + q];
        const float m = row_max(x, classes);
        const double log_sum = std::log(sum_exp(x, classes, m));
        if (t != ignore_index) part += log_sum - (static_cast<double>(x[t]) - m);
        if (!grads) continue;
        if (t == ignore_index) {
          std::fill(x, x + classes, 0.0f);
          continue;
        }
        const float lse = static_cast<float>(m + log_sum);
        const float xt = x[t];
        scaled_softmax(x, classes, lse, s, x);
        x[t] = s * (exp_approx(xt - lse) - 1.0f);
      }
      return part;
    });
    if (gh.defined()) {  // gh[rows of the block] = g · w
      gemm(compute, false, false, n, width, classes, 1.0f, logits, classes, pw, width, 0.0f, gh.data<float>() + r0 * width,
           width);
    }
    if (gw.defined()) {  // gw += gᵀ · h[rows of the block], the blocks added in order
      gemm(compute, true, false, classes, width, n, 1.0f, logits, classes, ph + r0 * width, width, r0 == 0 ? 0.0f : 1.0f,
           gw.data<float>(), width);
    }
  }
  // Every target ignored: 0 / 0 = NaN, as PyTorch's mean.
  *loss.data<float>() = count == 0 ? std::numeric_limits<float>::quiet_NaN()
                                   : static_cast<float>(total / static_cast<double>(count));
}

}  // namespace

DDP4J_REGISTER_KERNEL(linear_cross_entropy, CPU, linear_cross_entropy);
DDP4J_REGISTER_KERNEL(cross_entropy_lse_forward, CPU, cross_entropy_lse_forward);
DDP4J_REGISTER_KERNEL(cross_entropy_lse_backward, CPU, cross_entropy_lse_backward);

}  // namespace ddp4j::cpu
