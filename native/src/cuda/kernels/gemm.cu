// The float32 SGEMM of gemm.cuh.
//
// Each block computes a BM x BN tile of C with (BM / TM) x (BN / TN) threads, each thread a TM x TN
// micro-tile in registers. Rows of a thread's micro-tile are ty, ty + BM/TM, ... and columns tx,
// tx + BN/TN, ..., so shared-memory reads of a warp hit consecutive words (no bank conflicts) and
// stores to C are coalesced. The K dimension is walked in BK-deep slices: the next slice is loaded
// from global memory into registers while the current one (in shared memory) is multiplied.
// Loads map consecutive threads to the operand's contiguous dimension (coalesced); shared rows
// are padded by one float so the transposing stores do not conflict either. Out-of-range rows,
// columns and k read as zero.
//
// Two tile shapes: 64 x 64 (4 x 4 per thread) for general products, and 32 x 128 (2 x 8) when
// one side is at most 32 (conv weights with 16 or 32 filters, the linear layer's 10 outputs). A
// product whose columns are the short side is computed transposed (Cᵀ = Bᵀ Aᵀ, stored through
// strides), so the short side is always M.
#include <algorithm>

#include "cuda/cuda_context.h"
#include "cuda/kernels/gemm.cuh"

namespace ddp4j::cuda {
namespace {

struct Params {
  int M, N, K;
  const float* A;
  int64_t lda, sa;
  const float* B;
  int64_t ldb, sb;
  float* C;
  int64_t csm, csn, sc;  // C element (m, n) of output batch z: C + z * sc + m * csm + n * csn
  const float* bias;
  int bias_mode;
  int64_t batches, per_out;
};

constexpr int kBK = 16;

template <bool TA, bool TB, int BM, int BN, int TM, int TN>
__global__ void __launch_bounds__((BM / TM) * (BN / TN)) sgemm_kernel(const Params p) {
  constexpr int BK = kBK;
  constexpr int RM = BM / TM, RN = BN / TN, NT = RM * RN;
  constexpr int LA = BM * BK / NT, LB = BK * BN / NT;
  static_assert(BM * BK % NT == 0 && BK * BN % NT == 0, "tile loads must divide evenly");
  __shared__ float As[BK][BM + 1];
  __shared__ float Bs[BK][BN + 1];

  const int tid = threadIdx.x;
  const int tiles_n = (p.N + BN - 1) / BN;
  const int m0 = static_cast<int>(blockIdx.x / tiles_n) * BM;
  const int n0 = static_cast<int>(blockIdx.x % tiles_n) * BN;
  const int64_t z = blockIdx.z;
  const int64_t b_end = min((z + 1) * p.per_out, p.batches);

  float acc[TM][TN];
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;

  float ra[LA], rb[LB];
  int64_t lb = z * p.per_out;  // batch and k of the next slice to load
  int lk = 0;

  // Reads the slice (lb, lk) into registers and advances to the next one.
  auto load = [&]() {
    const float* A = p.A + lb * p.sa;
    const float* B = p.B + lb * p.sb;
#pragma unroll
    for (int l = 0; l < LA; ++l) {
      const int idx = tid + l * NT;
      const int kk = TA ? idx / BM : idx % BK;
      const int mm = TA ? idx % BM : idx / BK;
      const int m = m0 + mm, k = lk + kk;
      ra[l] = (m < p.M && k < p.K)
                  ? A[TA ? static_cast<int64_t>(k) * p.lda + m : static_cast<int64_t>(m) * p.lda + k]
                  : 0.0f;
    }
#pragma unroll
    for (int l = 0; l < LB; ++l) {
      const int idx = tid + l * NT;
      const int kk = TB ? idx % BK : idx / BN;
      const int nn = TB ? idx / BK : idx % BN;
      const int n = n0 + nn, k = lk + kk;
      rb[l] = (n < p.N && k < p.K)
                  ? B[TB ? static_cast<int64_t>(n) * p.ldb + k : static_cast<int64_t>(k) * p.ldb + n]
                  : 0.0f;
    }
    lk += BK;
    if (lk >= p.K) {
      lk = 0;
      ++lb;
    }
  };
  auto store = [&]() {
#pragma unroll
    for (int l = 0; l < LA; ++l) {
      const int idx = tid + l * NT;
      As[TA ? idx / BM : idx % BK][TA ? idx % BM : idx / BK] = ra[l];
    }
#pragma unroll
    for (int l = 0; l < LB; ++l) {
      const int idx = tid + l * NT;
      Bs[TB ? idx % BK : idx / BN][TB ? idx / BK : idx % BN] = rb[l];
    }
  };

  const int ty = tid / RN, tx = tid % RN;
  if (p.K > 0) {
    load();
    for (;;) {  // every thread runs the same iterations (lb, lk are uniform), so the barriers are safe
      store();
      __syncthreads();
      const bool more = lb < b_end;
      if (more) load();  // global loads in flight during the FMAs below
#pragma unroll
      for (int k = 0; k < BK; ++k) {
        float a[TM], b[TN];
#pragma unroll
        for (int i = 0; i < TM; ++i) a[i] = As[k][ty + i * RM];
#pragma unroll
        for (int j = 0; j < TN; ++j) b[j] = Bs[k][tx + j * RN];
#pragma unroll
        for (int i = 0; i < TM; ++i)
#pragma unroll
          for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
      }
      __syncthreads();  // the next store overwrites the slice just read
      if (!more) break;
    }
  }

  float* C = p.C + z * p.sc;
#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const int m = m0 + ty + i * RM;
    if (m >= p.M) continue;
#pragma unroll
    for (int j = 0; j < TN; ++j) {
      const int n = n0 + tx + j * RN;
      if (n >= p.N) continue;
      float v = acc[i][j];
      if (p.bias_mode == static_cast<int>(GemmBias::PerRow)) v += p.bias[m];
      if (p.bias_mode == static_cast<int>(GemmBias::PerColumn)) v += p.bias[n];
      C[static_cast<int64_t>(m) * p.csm + static_cast<int64_t>(n) * p.csn] = v;
    }
  }
}

// Tile shapes: {BM, BN, TM, TN}, 256 threads each.
constexpr int kSqBM = 64, kSqBN = 64, kSqTM = 4, kSqTN = 4;
constexpr int kWideBM = 32, kWideBN = 128, kWideTM = 2, kWideTN = 8;
constexpr int kThreads = 256;
static_assert((kSqBM / kSqTM) * (kSqBN / kSqTN) == kThreads, "square tile: 256 threads");
static_assert((kWideBM / kWideTM) * (kWideBN / kWideTN) == kThreads, "wide tile: 256 threads");

/** Whether the product is computed transposed (its columns are the short side). */
bool swapped(int M, int N) { return std::min(M, N) <= kWideBM && N < M; }

template <bool TA, bool TB>
void launch(const Params& p, bool wide, dim3 grid, cudaStream_t stream) {
  if (wide) {
    sgemm_kernel<TA, TB, kWideBM, kWideBN, kWideTM, kWideTN><<<grid, kThreads, 0, stream>>>(p);
  } else {
    sgemm_kernel<TA, TB, kSqBM, kSqBN, kSqTM, kSqTN><<<grid, kThreads, 0, stream>>>(p);
  }
}

int64_t tiles_for(int M, int N, bool wide) {
  const int64_t bm = wide ? kWideBM : kSqBM, bn = wide ? kWideBN : kSqBN;
  return ((M + bm - 1) / bm) * ((N + bn - 1) / bn);
}

}  // namespace

int64_t sgemm_tiles(int M, int N) {
  if (swapped(M, N)) std::swap(M, N);
  return tiles_for(M, N, M <= kWideBM);
}

void sgemm(const GemmArgs& a, cudaStream_t stream, const char* name) {
  if (a.M <= 0 || a.N <= 0) return;
  // Leaves room for m0 + BM and n0 + BN in int.
  constexpr int kMaxDim = 0x7fffffff - 256;
  DDP4J_CHECK_ARG(a.M <= kMaxDim && a.N <= kMaxDim && a.K >= 0 && a.K <= kMaxDim, name, ": matrix product ", a.M,
                  "x", a.K, " by ", a.K, "x", a.N, " is too large");
  DDP4J_CHECK_ARG(a.batches >= 1 && a.batches_per_output >= 1, name, ": invalid batch count");
  const int64_t out_batches = (a.batches + a.batches_per_output - 1) / a.batches_per_output;
  DDP4J_CHECK_ARG(out_batches <= 65535, name, ": ", out_batches, " output batches exceed the grid limit");

  Params p{};
  bool ta = a.trans_a, tb = a.trans_b;
  p.K = a.K;
  p.C = a.C;
  p.sc = a.stride_c;
  p.bias = a.bias;
  p.bias_mode = a.bias ? static_cast<int>(a.bias_mode) : 0;
  p.batches = a.batches;
  p.per_out = a.batches_per_output;
  if (swapped(a.M, a.N)) {
    // Cᵀ[N, M] = Bᵀ · Aᵀ: Bᵀ(n, k) = B(k, n), so its "transposed" flag is the opposite of B's.
    p.M = a.N;
    p.N = a.M;
    p.A = a.B;
    p.lda = a.ldb;
    p.sa = a.stride_b;
    ta = !a.trans_b;
    p.B = a.A;
    p.ldb = a.lda;
    p.sb = a.stride_a;
    tb = !a.trans_a;
    p.csm = 1;
    p.csn = a.ldc;
    if (p.bias_mode == static_cast<int>(GemmBias::PerRow)) {
      p.bias_mode = static_cast<int>(GemmBias::PerColumn);
    } else if (p.bias_mode == static_cast<int>(GemmBias::PerColumn)) {
      p.bias_mode = static_cast<int>(GemmBias::PerRow);
    }
  } else {
    p.M = a.M;
    p.N = a.N;
    p.A = a.A;
    p.lda = a.lda;
    p.sa = a.stride_a;
    p.B = a.B;
    p.ldb = a.ldb;
    p.sb = a.stride_b;
    p.csm = a.ldc;
    p.csn = 1;
  }
  const bool wide = p.M <= kWideBM;
  const int64_t tiles = tiles_for(p.M, p.N, wide);
  DDP4J_CHECK_ARG(tiles <= 0x7fffffff, name, ": matrix product too large for one grid");
  const dim3 grid(static_cast<unsigned>(tiles), 1, static_cast<unsigned>(out_batches));
  if (!ta && !tb) {
    launch<false, false>(p, wide, grid, stream);
  } else if (!ta && tb) {
    launch<false, true>(p, wide, grid, stream);
  } else if (ta && !tb) {
    launch<true, false>(p, wide, grid, stream);
  } else {
    launch<true, true>(p, wide, grid, stream);
  }
  DDP4J_CUDA_CHECK_LAUNCH(name);
}

}  // namespace ddp4j::cuda
