// sgemm (gemm.h): OpenBLAS calls on fixed blocks of C, spread over the intra-op threads.
#include "cpu/gemm.h"

#include <algorithm>

#include "ddp4j/parallel.h"

namespace ddp4j::cpu {
namespace {

// Each call repacks the operand it shares with the other blocks (B when rows are cut, A when
// columns are), about 1/block of the work in copies, so blocks are kept large: at least
// kMinBlock rows (or columns) and kMinBlockMacs multiply-adds, a multiple of kAlign (the
// micro-kernels' register tile), and no more than kMaxBlocks of them. Cutting the larger side
// of C repacks the smaller operand.
constexpr int64_t kMinBlock = 128;
constexpr int64_t kMinBlockMacs = int64_t{1} << 19;
constexpr int64_t kAlign = 16;
constexpr int64_t kMaxBlocks = 64;

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

void call(DType compute, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
          const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  gemm_block(compute, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

}  // namespace

void sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
           const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  gemm(DType::Float32, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void gemm(DType compute, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
          int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  if (m <= 0 || n <= 0) return;
  if (k <= 0) {
    parallel_for(0, m, std::max<int64_t>(1, kGrainSize / n), [=](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        float* row = c + r * ldc;
        if (beta == 0.0f) {
          std::fill(row, row + n, 0.0f);
        } else {
          for (int64_t j = 0; j < n; ++j) row[j] *= beta;
        }
      }
    });
    return;
  }
  const bool split_rows = m >= n;
  const int64_t along = split_rows ? m : n, across = split_rows ? n : m;
  int64_t block = std::max({kMinBlock, ceil_div(along, kMaxBlocks), ceil_div(kMinBlockMacs, across * k)});
  block = ceil_div(block, kAlign) * kAlign;
  if (block >= along) {
    call(compute, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    return;
  }
  parallel_for(0, ceil_div(along, block), 1, [=](int64_t q0, int64_t q1) {
    for (int64_t q = q0; q < q1; ++q) {
      const int64_t lo = q * block, len = std::min(block, along - lo);
      if (split_rows) {  // rows lo.. of C and of op(A)
        call(compute, trans_a, trans_b, len, n, k, alpha, trans_a ? a + lo : a + lo * lda, lda, b, ldb, beta, c + lo * ldc, ldc);
      } else {  // columns lo.. of C and of op(B)
        call(compute, trans_a, trans_b, m, len, k, alpha, a, lda, trans_b ? b + lo * ldb : b + lo, ldb, beta, c + lo, ldc);
      }
    }
  });
}

}  // namespace ddp4j::cpu
