// gemm.h: single-precision GEMM over the intra-op threads, with a result that does not depend on
// the thread count.
#pragma once
#include <cstdint>
#include <vector>

#include "ddp4j/tensor.h"

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

// ---- autocast: multiply in bfloat16 / float16, accumulate in float32 (gemm_lowp.cpp) -------------

/** How a bfloat16 GEMM multiplies on this CPU (float16 always takes Widen: no AVX512-FP16 here). */
enum class LowPrecisionKernel {
  Avx512Bf16,  // A and B packed as bfloat16 pairs, vdpbf16ps (AVX512-BF16): two products per lane
  Widen,       // A and B rounded to the low dtype while copied, widened back, float32 GEMM (OpenBLAS)
};

/**
 * The kernel bfloat16 GEMMs take: chosen once from cpuid (avx512_bf16) and DDP4J_CPU_BF16_KERNEL
 * (auto | avx512bf16 | widen; avx512bf16 on a CPU without it, or another value, throws
 * Error(InvalidArgument) naming the variable), unless set_bf16_kernel chose another since.
 */
LowPrecisionKernel bf16_kernel();

/** Whether this CPU can run kernel (Widen always). */
bool bf16_kernel_supported(LowPrecisionKernel kernel);

/** Makes later bfloat16 GEMMs take kernel (tests compare both); throws when the CPU cannot run it. */
void set_bf16_kernel(LowPrecisionKernel kernel);

/** "avx512bf16" or "widen". */
const char* bf16_kernel_name(LowPrecisionKernel kernel);

/**
 * As sgemm on the calling thread only, with op(A) and op(B) rounded to compute (round to nearest
 * even) before they are multiplied; products and sums in float32. compute Float32: one plain
 * cblas_sgemm. BFloat16 on the Avx512Bf16 kernel: the rounding happens while A and B are packed
 * (vcvtne2ps2bf16, which reads float32 subnormals as 0, as vdpbf16ps does) and each lane adds two
 * products per step, so sums differ from the Widen kernel's in the last bits (see gemm_lowp_test).
 */
void gemm_block(DType compute, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc);

/**
 * op(A) of gemm_block (m×k, trans_a and lda as there) packed once for several calls that share it
 * (a convolution's weight over images and pixel blocks). BFloat16 on the Avx512Bf16 kernel packs
 * it into bfloat16 pairs here; otherwise only the pointer is kept. `a` must outlive this object.
 */
class PackedA {
 public:
  PackedA(DType compute, bool trans_a, int64_t m, int64_t k, const float* a, int64_t lda);
  /**
   * gemm_block(compute, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc) with this
   * A, bit for bit; const, so threads may share one.
   */
  void gemm(bool trans_b, int64_t n, float alpha, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) const;

 private:
  DType compute_;
  bool trans_a_;
  int64_t m_, k_, lda_;
  const float* a_;
  std::vector<uint32_t> packed_;  // empty: not packed (gemm_block packs as usual)
};

/** sgemm over the intra-op threads (same blocks, same thread-count independence) with gemm_block(compute, ...). */
void gemm(DType compute, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
          int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc);

}  // namespace ddp4j::cpu
