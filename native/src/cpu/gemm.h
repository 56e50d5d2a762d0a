// gemm.h: single-precision GEMM over the intra-op threads, with a result that does not depend on
// the thread count.
#pragma once
#include <cstdint>

namespace ddp4j::cpu {

/**
 * C = alpha · op(A) · op(B) + beta · C in row-major storage, as cblas_sgemm(CblasRowMajor, ...):
 * C is m×n (leading dimension ldc), op(A) m×k, op(B) k×n; trans_a / trans_b select Aᵀ / Bᵀ.
 * The larger of C's two dimensions is cut into blocks whose size depends only on (m, n, k), each
 * block one OpenBLAS call (OpenBLAS runs single-threaded inside ddp4j, see parallel.cpp), and the
 * blocks are spread over the intra-op threads; so every element of C comes from the same call
 * with the same operands for any thread count. k == 0 scales C by beta (BLAS would reject the
 * zero leading dimension); m == 0 or n == 0 does nothing.
 */
void sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
           const float* b, int64_t ldb, float beta, float* c, int64_t ldc);

}  // namespace ddp4j::cpu
