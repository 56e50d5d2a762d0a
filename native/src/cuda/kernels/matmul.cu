// CUDA kernel of matmul: batched products with PyTorch's broadcasting of the batch dims through the
// project's own SGEMM (gemm.cuh: float32 FMA, no TF32, no cuBLAS), operands read in place with the
// transpose flags. The output batch is walked as runs along its innermost (merged) batch dimension:
// within a run a and b step by fixed matrix strides (0 where broadcast), so each run is one strided
// batched launch; the runs (one for the usual layouts) are launched one after another.
#include <algorithm>

#include "cuda/cuda_context.h"
#include "cuda/kernels/gemm.cuh"
#include "cuda/kernels/indexing.cuh"
#include "ddp4j/broadcast.h"
#include "ddp4j/dispatch.h"
#include "ddp4j/kernels.h"

namespace ddp4j::cuda {
namespace {

/** The batch dims of a matrix stack (all but the last two). */
Shape batch_of(const Shape& s) { return Shape(s.begin(), s.end() - 2); }

/** Most batches one sgemm launch takes (its grid's z dimension). */
constexpr int64_t kMaxBatchesPerLaunch = 65535;

void matmul(const Tensor& a, const Tensor& b, bool trans_a, bool trans_b, Tensor& out) {
  const Shape& os = out.shape();
  const int n_out = out.dim();
  const int64_t m = os[n_out - 2], n = os[n_out - 1];
  const int64_t k = trans_a ? a.shape()[a.dim() - 2] : a.shape()[a.dim() - 1];
  const int64_t lda = a.shape()[a.dim() - 1], ldb = b.shape()[b.dim() - 1];
  const Shape batch = batch_of(os);
  const int64_t batches = shape_numel(batch);
  if (batches == 0 || m == 0 || n == 0) return;
  constexpr int64_t kMaxDim = 0x7fffff00;
  DDP4J_CHECK_ARG(m <= kMaxDim && n <= kMaxDim && k <= kMaxDim, "matmul: matrices ", m, "x", k, " by ", k, "x", n,
                  " are too large for the CUDA GEMM");
  // Strides in matrices of a's and b's batch index for each batch dim of out, merged (indexing.cuh).
  const StridedWalk<2> walk = make_walk<2>(
      "matmul", batch, {broadcast_strides(batch_of(a.shape()), batch), broadcast_strides(batch_of(b.shape()), batch)});
  const int64_t a_matrix = a.shape()[a.dim() - 2] * lda, b_matrix = b.shape()[b.dim() - 2] * ldb;
  // The innermost merged dim is a run; the dims before it are walked here on the host.
  const int64_t run = walk.ndim == 0 ? 1 : walk.size[walk.ndim - 1];
  const int64_t run_a = walk.ndim == 0 ? 0 : walk.stride[0][walk.ndim - 1];
  const int64_t run_b = walk.ndim == 0 ? 0 : walk.stride[1][walk.ndim - 1];
  LaunchContext ctx(out);
  GemmArgs g;
  g.M = static_cast<int>(m);
  g.N = static_cast<int>(n);
  g.K = static_cast<int>(k);
  g.lda = lda;
  g.trans_a = trans_a;
  g.stride_a = run_a * a_matrix;
  g.ldb = ldb;
  g.trans_b = trans_b;
  g.stride_b = run_b * b_matrix;
  g.ldc = n;
  g.stride_c = m * n;
  const float* pa = a.data<float>();
  const float* pb = b.data<float>();
  float* po = out.data<float>();
  for (int64_t r = 0; r < batches / run; ++r) {
    // Matrix offsets of the run's first batch: r counts the outer dims (all but the last).
    int64_t oa = 0, ob = 0, rest = r;
    for (int d = walk.ndim - 2; d >= 0; --d) {
      const int64_t i = rest % walk.size[d];
      rest /= walk.size[d];
      oa += i * walk.stride[0][d];
      ob += i * walk.stride[1][d];
    }
    for (int64_t q0 = 0; q0 < run; q0 += kMaxBatchesPerLaunch) {
      g.batches = std::min(kMaxBatchesPerLaunch, run - q0);
      g.A = pa + (oa + q0 * run_a) * a_matrix;
      g.B = pb + (ob + q0 * run_b) * b_matrix;
      g.C = po + (r * run + q0) * m * n;
      sgemm(g, ctx.stream, "matmul");
    }
  }
}

}  // namespace

DDP4J_REGISTER_KERNEL(matmul, CUDA, matmul);

}  // namespace ddp4j::cuda
