// gemm.cuh: the float32 matrix product that linear and conv use (gemm.cu): a shared-memory tiled
// SGEMM with register micro-tiles, plain FMA in float32 (no TF32, no tensor cores), transposed or
// plain operands, any sizes (edges are masked), strided batches, and batches that are summed into
// one output (the convolution's weight gradient adds over the images of a group).
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

namespace ddp4j::cuda {

/** Where gemm adds a bias vector: none, bias[m] to row m, or bias[n] to column n. */
enum class GemmBias : int { None = 0, PerRow = 1, PerColumn = 2 };

/**
 * C_z[M, N] = Σ_{b in batches of z} A_b[M, K] · B_b[K, N] (+ bias), row-major C with leading
 * dimension ldc, for output batch z = 0 .. ceil(batches / batches_per_output) - 1, where the input
 * batches of z are z * batches_per_output .. (z + 1) * batches_per_output - 1 (fewer for the last).
 * A_b = A + b * stride_a is [M, K] with leading dimension lda, or, when trans_a, stored as [K, M]
 * (element (m, k) at k * lda + m); likewise B_b (element (k, n) at k * ldb + n, or at n * ldb + k
 * when trans_b). C_z = C + z * stride_c. With K == 0, C is the bias (or zeros). C is overwritten
 * and must not overlap A or B.
 */
struct GemmArgs {
  int M = 0, N = 0, K = 0;
  const float* A = nullptr;
  int64_t lda = 0;
  bool trans_a = false;
  int64_t stride_a = 0;
  const float* B = nullptr;
  int64_t ldb = 0;
  bool trans_b = false;
  int64_t stride_b = 0;
  float* C = nullptr;
  int64_t ldc = 0;
  int64_t stride_c = 0;
  const float* bias = nullptr;
  GemmBias bias_mode = GemmBias::None;
  int64_t batches = 1;
  int64_t batches_per_output = 1;
};

/**
 * Launches the product on stream (whose device must be current). Throws ddp4j::Error naming `name`
 * when the launch fails or there are more than 65535 output batches. Does nothing when M or N is 0.
 */
void sgemm(const GemmArgs& args, cudaStream_t stream, const char* name);

/** Number of thread blocks sgemm launches per output batch for an M x N product (to size groups). */
int64_t sgemm_tiles(int M, int N);

}  // namespace ddp4j::cuda
