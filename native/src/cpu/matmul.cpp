// CPU kernel of matmul: one GEMM (cpu::sgemm, OpenBLAS on fixed blocks) per pair of matrices of
// the broadcast batch, operands read in place with the BLAS transpose flags. The batch is spread
// over the intra-op threads (each GEMM then runs inside one thread, cut into the same blocks), so
// the bits do not depend on the thread count.
#include <algorithm>

#include "cpu/gemm.h"
#include "ddp4j/broadcast.h"
#include "ddp4j/dispatch.h"
#include "ddp4j/kernels.h"
#include "ddp4j/parallel.h"

namespace ddp4j::cpu {
namespace {

/** The batch dims of a matrix stack (all but the last two). */
Shape batch_of(const Shape& s) { return Shape(s.begin(), s.end() - 2); }

void matmul(const Tensor& a, const Tensor& b, bool trans_a, bool trans_b, Tensor& out) {
  const Shape& os = out.shape();
  const int n_out = out.dim();
  const int64_t m = os[n_out - 2], n = os[n_out - 1];
  const int64_t k = trans_a ? a.shape()[a.dim() - 2] : a.shape()[a.dim() - 1];
  const int64_t lda = a.shape()[a.dim() - 1], ldb = b.shape()[b.dim() - 1];
  const Shape batch = batch_of(os);
  const int64_t batches = shape_numel(batch);
  if (batches == 0 || m == 0 || n == 0) return;
  // Broadcast strides counted in matrices: a batch index of out -> the matrix of a and of b.
  const std::vector<int64_t> sa = broadcast_strides(batch_of(a.shape()), batch);
  const std::vector<int64_t> sb = broadcast_strides(batch_of(b.shape()), batch);
  const int64_t a_matrix = a.shape()[a.dim() - 2] * lda, b_matrix = b.shape()[b.dim() - 2] * ldb;
  const float* pa = a.data<float>();
  const float* pb = b.data<float>();
  float* po = out.data<float>();
  parallel_for(0, batches, 1, [&](int64_t q0, int64_t q1) {
    for (int64_t q = q0; q < q1; ++q) {
      const float* ma = pa + (batch.empty() ? 0 : broadcast_offset(q, batch, sa)) * a_matrix;
      const float* mb = pb + (batch.empty() ? 0 : broadcast_offset(q, batch, sb)) * b_matrix;
      sgemm(trans_a, trans_b, m, n, k, 1.0f, ma, lda, mb, ldb, 0.0f, po + q * m * n, n);
    }
  });
}

}  // namespace

DDP4J_REGISTER_KERNEL(matmul, CPU, matmul);

}  // namespace ddp4j::cpu
