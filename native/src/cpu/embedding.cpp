// CPU embedding: a row gather forward; backward a dense scatter-add in which each thread owns a
// range of the embedding's columns and adds the rows in index order, so every sum has one order
// whatever the thread count.
#include <algorithm>
#include <cstring>

#include "ddp4j/dispatch.h"
#include "ddp4j/errors.h"
#include "ddp4j/parallel.h"
#include "ddp4j/transformer_kernels.h"

namespace ddp4j::cpu {
namespace {

void embedding_forward(const Tensor& index, const Tensor& weight, Tensor& out) {
  const int64_t n = index.numel(), v = weight.size(0), d = weight.size(1);
  const int64_t* pi = index.data<int64_t>();
  for (int64_t i = 0; i < n; ++i) {
    DDP4J_CHECK_ARG(pi[i] >= 0 && pi[i] < v, "embedding: index ", pi[i], " at position ", i,
                    " is out of range for an embedding of size ", v, " (valid indices are 0 to ", v - 1, ")");
  }
  const float* pw = weight.data<float>();
  float* po = out.data<float>();
  parallel_for(0, n, std::max<int64_t>(1, kGrainSize / std::max<int64_t>(d, 1)), [=](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) std::memcpy(po + i * d, pw + pi[i] * d, sizeof(float) * d);
  });
}

void embedding_backward(const Tensor& gout, const Tensor& index, int64_t padding_idx, Tensor& gweight) {
  const int64_t n = index.numel(), v = gweight.size(0), d = gweight.size(1);
  const int64_t* pi = index.data<int64_t>();
  for (int64_t i = 0; i < n; ++i) {
    DDP4J_CHECK_ARG(pi[i] >= 0 && pi[i] < v, "embedding_backward: index ", pi[i], " at position ", i,
                    " is out of range for an embedding of size ", v);
  }
  const float* pg = gout.data<float>();
  float* pw = gweight.data<float>();
  std::memset(pw, 0, sizeof(float) * static_cast<size_t>(gweight.numel()));
  parallel_for(0, d, std::max<int64_t>(1, kGrainSize / std::max<int64_t>(n, 1)), [=](int64_t c0, int64_t c1) {
    for (int64_t i = 0; i < n; ++i) {
      if (pi[i] == padding_idx) continue;
      float* row = pw + pi[i] * d;
      const float* g = pg + i * d;
      for (int64_t c = c0; c < c1; ++c) row[c] += g[c];
    }
  });
}

}  // namespace

DDP4J_REGISTER_KERNEL(embedding_forward, CPU, embedding_forward);
DDP4J_REGISTER_KERNEL(embedding_backward, CPU, embedding_backward);

}  // namespace ddp4j::cpu
