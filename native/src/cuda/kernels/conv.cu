// CUDA Conv2d (dilation 1, groups 1, any stride and padding; other dilations and groups are
// rejected): im2col + SGEMM, as the CPU kernel.
//
// The batch is cut into chunks of images whose unfolded input col[m, C*R*S, P*Q] fits in
// kMaxColFloats (scratch from the caching allocator, reused by every chunk: all work is ordered
// on the compute stream). Per chunk:
//   forward   y[n] = W[K, CRS] · col[n] + b             one batched GEMM (a batch per image),
//                                                       written straight into y's [N, K, P, Q]
//   weight    gW = Σ_n gy[n][K, PQ] · col[n]ᵀ            one GEMM whose output batches each add
//                                                       the images of a group; the groups'
//                                                       partial gW are added in double at the end
//   input     gcol[n] = Wᵀ · gy[n], then col2im          batched GEMM into col, then a gather
//                                                       (each input element adds the window
//                                                       positions that read it: no atomics)
//   bias      gb = Σ over n, p, q of gy                  channel sums in double (reduce.cuh)
#include <algorithm>

#include "cuda/cuda_context.h"
#include "cuda/kernels/gemm.cuh"
#include "cuda/kernels/reduce.cuh"
#include "ddp4j/dispatch.h"
#include "ddp4j/kernels.h"

namespace ddp4j::cuda {
namespace {

/** Most floats of im2col scratch per chunk (256 MiB); a chunk always holds at least one image. */
constexpr int64_t kMaxColFloats = int64_t{1} << 26;
/** Aim for about this many blocks in the weight-gradient GEMM (groups x tiles) per chunk. */
constexpr int64_t kTargetGemmBlocks = 512;
constexpr int kThreads = 256;

struct Dims {
  int64_t N, C, H, W, K, R, S, P, Q;
  int sh, sw, ph, pw;
  __host__ __device__ int64_t crs() const { return C * R * S; }
  __host__ __device__ int64_t pq() const { return P * Q; }
  __host__ __device__ int64_t chw() const { return C * H * W; }
};

Dims dims_of(const Tensor& x, const Tensor& w, const Tensor& y_like, const kernels::Conv2dGeometry& g) {
  return Dims{x.size(0), x.size(1), x.size(2), x.size(3), w.size(0), w.size(2), w.size(3), y_like.size(2),
              y_like.size(3), g.stride_h, g.stride_w, g.pad_h, g.pad_w};
}

/**
 * Unfolds images x[m, C, H, W] into col[m, C*R*S, P*Q] (zeros where the window reads padding).
 * One thread per (image, channel, output position) writes its R*S column entries; the block index
 * encodes the plane (image, channel) and the part of the P*Q positions, so threads need only two
 * divisions. Consecutive threads write consecutive positions of each col row (coalesced).
 */
__global__ void __launch_bounds__(kThreads) im2col_kernel(const float* x, Dims d, int64_t parts, float* col) {
  const int64_t plane = blockIdx.x / parts;  // i * C + c
  const int64_t pq = (blockIdx.x % parts) * kThreads + threadIdx.x;
  const int64_t PQ = d.P * d.Q;
  if (pq >= PQ) return;
  const int64_t i = plane / d.C, c = plane % d.C;
  const int64_t p = pq / d.Q, q = pq % d.Q;
  const float* in = x + plane * d.H * d.W;
  float* out = col + (i * d.crs() + c * d.R * d.S) * PQ + pq;
  for (int64_t r = 0; r < d.R; ++r) {
    const int64_t h = p * d.sh - d.ph + r;
    const bool row_ok = h >= 0 && h < d.H;
    for (int64_t s = 0; s < d.S; ++s) {
      const int64_t w = q * d.sw - d.pw + s;
      out[(r * d.S + s) * PQ] = (row_ok && w >= 0 && w < d.W) ? in[h * d.W + w] : 0.0f;
    }
  }
}

/**
 * gx[m, C, H, W] = Σ of the column gradients gcol[m, CRS, PQ] that came from each input element:
 * x[i, c, h, w] was read by output (p, q) at window offset (r, s) = (h + ph - p*sh, w + pw - q*sw)
 * when that offset lies in [0, R) x [0, S). The outputs are walked in decreasing p and q, i.e. in
 * increasing (r, s), the order of the CPU col2im; the ranges are computed, not searched, so the
 * loop body has no divisions. One thread per input element; overwrites gx.
 */
__global__ void __launch_bounds__(kThreads) col2im_kernel(const float* gcol, Dims d, int64_t parts, float* gx) {
  const int64_t plane = blockIdx.x / parts;
  const int64_t hw = (blockIdx.x % parts) * kThreads + threadIdx.x;
  if (hw >= d.H * d.W) return;
  const int64_t i = plane / d.C, c = plane % d.C;
  const int64_t hp = hw / d.W + d.ph, wp = hw % d.W + d.pw;  // coordinates in the padded input
  const int64_t PQ = d.P * d.Q;
  // p*sh <= hp and hp - p*sh <= R - 1; likewise for q.
  const int64_t p_hi = min(hp / d.sh, d.P - 1), q_hi = min(wp / d.sw, d.Q - 1);
  const int64_t p_lo = hp - d.R + 1 <= 0 ? 0 : (hp - d.R + 1 + d.sh - 1) / d.sh;
  const int64_t q_lo = wp - d.S + 1 <= 0 ? 0 : (wp - d.S + 1 + d.sw - 1) / d.sw;
  const float* g = gcol + (i * d.crs() + c * d.R * d.S) * PQ;
  float acc = 0.0f;
  for (int64_t p = p_hi; p >= p_lo; --p) {
    const int64_t r = hp - p * d.sh;
    for (int64_t q = q_hi; q >= q_lo; --q) {
      const int64_t s = wp - q * d.sw;
      acc += g[(r * d.S + s) * PQ + p * d.Q + q];
    }
  }
  gx[plane * d.H * d.W + hw] = acc;
}

/** out[e] = Σ_g partials[g * n + e] for e < n, added in double in group order. */
__global__ void sum_groups_kernel(const float* partials, int64_t groups, int64_t n, float* out) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < n; e += stride) {
    double s = 0.0;
    for (int64_t g = 0; g < groups; ++g) s += partials[g * n + e];
    out[e] = static_cast<float>(s);
  }
}

void im2col(const float* x, const Dims& d, int64_t m, float* col, cudaStream_t stream) {
  const int64_t parts = (d.pq() + kThreads - 1) / kThreads;
  const int64_t blocks = m * d.C * parts;
  DDP4J_CHECK_ARG(blocks <= 0x7fffffff, "conv2d: input too large for one grid");
  im2col_kernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(x, d, parts, col);
  DDP4J_CUDA_CHECK_LAUNCH("conv2d (im2col)");
}

void col2im(const float* gcol, const Dims& d, int64_t m, float* gx, cudaStream_t stream) {
  const int64_t parts = (d.H * d.W + kThreads - 1) / kThreads;
  const int64_t blocks = m * d.C * parts;
  DDP4J_CHECK_ARG(blocks <= 0x7fffffff, "conv2d_backward: input too large for one grid");
  col2im_kernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(gcol, d, parts, gx);
  DDP4J_CUDA_CHECK_LAUNCH("conv2d_backward (col2im)");
}

/** Images per chunk: as many as fit in kMaxColFloats, at least one, at most 65535 (grid z). */
int64_t chunk_images(const Dims& d) {
  const int64_t per_image = std::max<int64_t>(1, d.crs() * d.pq());
  return std::clamp<int64_t>(kMaxColFloats / per_image, 1, std::min<int64_t>(std::max<int64_t>(d.N, 1), 65535));
}

/** These kernels unfold densely and in one group; say so instead of computing something else. */
void check_supported(const kernels::Conv2dGeometry& g, const char* op) {
  DDP4J_CHECK_ARG(g.dilation_h == 1 && g.dilation_w == 1 && g.groups == 1, op,
                  ": the CUDA kernels support dilation 1 and groups 1 only, got dilation (", g.dilation_h, ", ",
                  g.dilation_w, ") and groups ", g.groups, "; run this convolution on the CPU");
}

void check_sizes(const Dims& d, const char* op) {
  constexpr int64_t kMax = 0x7fffff00;
  DDP4J_CHECK_ARG(d.K <= kMax && d.crs() <= kMax && d.pq() <= kMax, op, ": sizes too large for the CUDA kernels");
}

/** x[N, C, H, W], w[K, C, R, S], b[K] or undefined -> y[N, K, P, Q] (overwritten). */
void conv2d_forward(const Tensor& x, const Tensor& w, const Tensor& b, Tensor& y, const kernels::Conv2dGeometry& g) {
  check_supported(g, "conv2d");
  const Dims d = dims_of(x, w, y, g);
  if (y.numel() == 0) return;
  check_sizes(d, "conv2d");
  LaunchContext ctx(y);
  const int64_t crs = d.crs(), pq = d.pq(), nb = chunk_images(d);
  Tensor col = Tensor::empty({nb * crs * pq}, DType::Float32, y.device());
  for (int64_t n0 = 0; n0 < d.N; n0 += nb) {
    const int64_t m = std::min(nb, d.N - n0);
    im2col(x.data<float>() + n0 * d.chw(), d, m, col.data<float>(), ctx.stream);
    GemmArgs a;  // y[n][K, PQ] = W[K, CRS] · col[n][CRS, PQ] + b[K], one batch per image
    a.M = static_cast<int>(d.K);
    a.N = static_cast<int>(pq);
    a.K = static_cast<int>(crs);
    a.A = w.data<float>();
    a.lda = crs;
    a.B = col.data<float>();
    a.ldb = pq;
    a.stride_b = crs * pq;
    a.C = y.data<float>() + n0 * d.K * pq;
    a.ldc = pq;
    a.stride_c = d.K * pq;
    if (b.defined()) {
      a.bias = b.data<float>();
      a.bias_mode = GemmBias::PerRow;
    }
    a.batches = m;
    sgemm(a, ctx.stream, "conv2d");
  }
}

/** Gradients of conv2d_forward; gx and gb may be undefined. All outputs are overwritten. */
void conv2d_backward(const Tensor& gy, const Tensor& x, const Tensor& w, Tensor& gx, Tensor& gw, Tensor& gb,
                     const kernels::Conv2dGeometry& g) {
  check_supported(g, "conv2d_backward");
  const Dims d = dims_of(x, w, gy, g);
  LaunchContext ctx(gw);
  if (gy.numel() == 0) {  // empty batch or output: every gradient is zero (all-zero bits is 0.0f)
    DDP4J_CUDA_CHECK(cudaMemsetAsync(gw.raw_data(), 0, gw.nbytes(), ctx.stream));
    if (gx.defined() && gx.nbytes() > 0) DDP4J_CUDA_CHECK(cudaMemsetAsync(gx.raw_data(), 0, gx.nbytes(), ctx.stream));
    if (gb.defined()) DDP4J_CUDA_CHECK(cudaMemsetAsync(gb.raw_data(), 0, gb.nbytes(), ctx.stream));
    return;
  }
  check_sizes(d, "conv2d_backward");
  const int64_t crs = d.crs(), pq = d.pq(), kcrs = d.K * crs, nb = chunk_images(d);

  if (gb.defined()) {
    channel_sums(gy.data<float>(), d.N, d.K, pq, gb.data<float>(), ctx.device, ctx.stream, "conv2d_backward (bias)");
  }

  // Weight gradient groups: each output batch of the GEMM adds `per` images; enough groups to
  // fill the GPU, and their partial gW are added at the end (or written to gw when there is one).
  const int64_t tiles = sgemm_tiles(static_cast<int>(d.K), static_cast<int>(crs));
  auto groups_of = [&](int64_t m, int64_t& per) {
    const int64_t want = std::clamp<int64_t>(kTargetGemmBlocks / std::max<int64_t>(tiles, 1), 1, m);
    per = (m + want - 1) / want;
    return (m + per - 1) / per;
  };
  int64_t total_groups = 0;
  for (int64_t n0 = 0; n0 < d.N; n0 += nb) {
    int64_t per;
    total_groups += groups_of(std::min(nb, d.N - n0), per);
  }
  Tensor partials = total_groups > 1 ? Tensor::empty({total_groups * kcrs}, DType::Float32, gw.device()) : Tensor();
  float* gw_out = total_groups > 1 ? partials.data<float>() : gw.data<float>();

  Tensor col = Tensor::empty({nb * crs * pq}, DType::Float32, gw.device());
  int64_t group0 = 0;
  for (int64_t n0 = 0; n0 < d.N; n0 += nb) {
    const int64_t m = std::min(nb, d.N - n0);
    const float* gy_chunk = gy.data<float>() + n0 * d.K * pq;
    im2col(x.data<float>() + n0 * d.chw(), d, m, col.data<float>(), ctx.stream);

    int64_t per;
    const int64_t groups = groups_of(m, per);
    GemmArgs a;  // gW_group[K, CRS] = Σ_{n in group} gy[n][K, PQ] · col[n]ᵀ
    a.M = static_cast<int>(d.K);
    a.N = static_cast<int>(crs);
    a.K = static_cast<int>(pq);
    a.A = gy_chunk;
    a.lda = pq;
    a.stride_a = d.K * pq;
    a.B = col.data<float>();  // B(k = pq, n = crs) = col[n][crs][pq]
    a.ldb = pq;
    a.trans_b = true;
    a.stride_b = crs * pq;
    a.C = gw_out + group0 * kcrs;
    a.ldc = crs;
    a.stride_c = kcrs;
    a.batches = m;
    a.batches_per_output = per;
    sgemm(a, ctx.stream, "conv2d_backward (weight gradient)");
    group0 += groups;

    if (gx.defined()) {
      // gcol[n][CRS, PQ] = Wᵀ · gy[n], written over col (the GEMM above, earlier on the stream,
      // has read it), then folded into gx.
      GemmArgs b;
      b.M = static_cast<int>(crs);
      b.N = static_cast<int>(pq);
      b.K = static_cast<int>(d.K);
      b.A = w.data<float>();  // A(m = crs, k) = w[k][crs]
      b.lda = crs;
      b.trans_a = true;
      b.B = gy_chunk;
      b.ldb = pq;
      b.stride_b = d.K * pq;
      b.C = col.data<float>();
      b.ldc = pq;
      b.stride_c = crs * pq;
      b.batches = m;
      sgemm(b, ctx.stream, "conv2d_backward (input gradient)");
      col2im(col.data<float>(), d, m, gx.data<float>() + n0 * d.chw(), ctx.stream);
    }
  }
  if (total_groups > 1) {
    sum_groups_kernel<<<grid_for(kcrs, kThreads), kThreads, 0, ctx.stream>>>(partials.data<float>(), total_groups,
                                                                             kcrs, gw.data<float>());
    DDP4J_CUDA_CHECK_LAUNCH("conv2d_backward (weight gradient sum)");
  }
}

}  // namespace

DDP4J_REGISTER_KERNEL(conv2d_forward, CUDA, conv2d_forward);
DDP4J_REGISTER_KERNEL(conv2d_backward, CUDA, conv2d_backward);

}  // namespace ddp4j::cuda
