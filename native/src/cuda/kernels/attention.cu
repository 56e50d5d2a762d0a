// CUDA scaled dot-product attention, flash attention's algorithm as in src/cpu/attention.cpp:
//   forward:  block = (batch-head, tile of T queries), one thread per query; the keys and values
//             of each key tile are staged in shared memory, the thread's scores for the tile too,
//             and an online softmax (running max m, running sum l, rescaled accumulator in shared
//             memory) walks the key tiles, so no L x S matrix exists; out and each row's
//             logsumexp are written. Causal tiles wholly above the diagonal are skipped.
//   backward: delta = rowsum(dO * O) per query; then block = (batch-head, tile of T keys), one
//             thread per key, walking the query tiles in order for dK and dV; and block =
//             (batch-head, tile of T queries), one thread per query, walking the key tiles in order
//             for dQ. The probabilities are recomputed from the logsumexp.
// Every output element is summed by one thread in a fixed order: deterministic, no atomics.
// Dropout's keep mask is the CPU kernel's counter-based hash of (seed, batch-head, i, j), so CPU
// and GPU keep the same elements; it is recomputed, never stored.
//
// T is 64 threads when the tiles fit the device's shared memory, halved until they do.
#include <algorithm>
#include <vector>

#include "cuda/cuda_context.h"
#include "ddp4j/dispatch.h"
#include "ddp4j/transformer_kernels.h"

namespace ddp4j::cuda {
namespace {

constexpr int kMaxTile = 64;

/** What every attention kernel reads: the call's shape and its inputs on the device. */
struct AttentionArgs {
  const float* q;
  const float* k;
  const float* v;
  const float* mask;           // null: no mask
  const int64_t* mask_offsets;  // [bh] on the device
  int64_t bh, l, s, e, ev, mask_row_stride, mask_col_stride;
  float scale, keep_scale;
  bool causal;
  double dropout_p;
  uint64_t dropout_seed;
};

/** SplitMix64's finaliser, as src/cpu/attention.cpp. */
__device__ __forceinline__ uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/** Dropout's multiplier of probability (b, i, j): keep_scale when kept, 0 when dropped, 1 without dropout. */
__device__ __forceinline__ float keep(const AttentionArgs& a, int64_t b, int64_t i, int64_t j) {
  if (a.dropout_p <= 0) return 1.0f;
  const uint64_t counter = (static_cast<uint64_t>(b) * a.l + i) * a.s + j;
  const uint64_t h = mix64(a.dropout_seed + (counter + 1) * 0x9e3779b97f4a7c15ULL);
  const double u = static_cast<double>(h >> 40) * 0x1.0p-24;  // uniform in [0, 1) on a 2^-24 grid
  return u >= a.dropout_p ? a.keep_scale : 0.0f;
}

/** Keys j < this bound may be attended from query i (the causal mask from the top left). */
__device__ __forceinline__ int64_t key_end(const AttentionArgs& a, int64_t i) {
  return a.causal ? min(a.s, i + 1) : a.s;
}

/** The scaled, masked score of query row qi (i) against key row kj (j), both in shared memory. */
__device__ __forceinline__ float score(const AttentionArgs& a, int64_t b, const float* qi, const float* kj, int64_t i,
                                       int64_t j) {
  float dot = 0;
  for (int64_t c = 0; c < a.e; ++c) dot += qi[c] * kj[c];
  float s = dot * a.scale;
  if (a.mask != nullptr) s += a.mask[a.mask_offsets[b] + i * a.mask_row_stride + j * a.mask_col_stride];
  return s;
}

/** dst[r * dst_stride + c] = src rows [row0, row0 + rows) of width `width` (zero past `limit`), by all T threads. */
__device__ __forceinline__ void stage_rows(const float* src, int64_t row0, int64_t limit, int64_t width, int tile,
                                           float* dst, int64_t dst_stride) {
  for (int64_t x = threadIdx.x; x < tile * width; x += blockDim.x) {
    const int64_t r = x / width, c = x - r * width;
    dst[r * dst_stride + c] = row0 + r < limit ? src[(row0 + r) * width + c] : 0.0f;
  }
}

// Shared memory, in floats, of each kernel for a tile T (padded rows: a thread's own row of width
// w is laid at stride w + 1 so that threads walking their rows hit different banks).
int64_t forward_floats(int64_t t, int64_t e, int64_t ev) { return t * ((e + 1) + (ev + 1) + e + ev + (t + 1)); }
int64_t dkdv_floats(int64_t t, int64_t e, int64_t ev) { return t * (2 * (e + 1) + 2 * (ev + 1) + e + ev + 2); }
int64_t dq_floats(int64_t t, int64_t e, int64_t ev) { return t * (2 * (e + 1) + (ev + 1) + e + ev); }

__global__ void attention_forward_kernel(AttentionArgs a, int tile, float* out, float* lse) {
  extern __shared__ float smem[];
  const int64_t T = tile, pe = a.e + 1, pv = a.ev + 1;
  float* qs = smem;           // [T][pe]  this tile's queries
  float* acc = qs + T * pe;   // [T][pv]  running Σ p * keep * v
  float* ks = acc + T * pv;   // [T][e]   the key tile
  float* vs = ks + T * a.e;   // [T][ev]  the value tile
  float* sc = vs + T * a.ev;  // [T][T+1] each query's scores for the key tile
  const int64_t q_tiles = (a.l + T - 1) / T;
  const int64_t b = blockIdx.x / q_tiles, i0 = (blockIdx.x % q_tiles) * T, i1 = min(a.l, i0 + T);
  const int t = threadIdx.x;
  stage_rows(a.q + b * a.l * a.e, i0, a.l, a.e, tile, qs, pe);
  for (int64_t x = t; x < T * pv; x += T) acc[x] = 0.0f;
  __syncthreads();  // the staged queries and the zeroed accumulators are visible to all
  const int64_t i = i0 + t;
  const bool active = i < a.l;
  const int64_t jlimit = active ? key_end(a, i) : 0;
  const float* qi = qs + t * pe;
  float* ai = acc + t * pv;
  float* si = sc + t * (T + 1);
  float m = -INFINITY, lsum = 0.0f;
  for (int64_t j0 = 0; j0 < a.s; j0 += T) {
    if (a.causal && j0 > i1 - 1) break;  // the tile lies above the diagonal for every query here
    const int64_t j1 = min(a.s, j0 + T);
    __syncthreads();  // everyone is done with the previous tile
    stage_rows(a.k + b * a.s * a.e, j0, a.s, a.e, tile, ks, a.e);
    stage_rows(a.v + b * a.s * a.ev, j0, a.s, a.ev, tile, vs, a.ev);
    __syncthreads();
    const int64_t jend = min(j1, jlimit);
    if (jend <= j0) continue;
    float tile_max = -INFINITY;
    for (int64_t j = j0; j < jend; ++j) {
      const float s = score(a, b, qi, ks + (j - j0) * a.e, i, j);
      si[j - j0] = s;
      tile_max = fmaxf(tile_max, s);
    }
    const float new_m = fmaxf(m, tile_max);
    if (new_m == -INFINITY) continue;  // everything so far masked out
    const float alpha = expf(m - new_m);  // exp(-inf) = 0 on the first tile
    if (alpha != 1.0f) {
      lsum *= alpha;
      for (int64_t c = 0; c < a.ev; ++c) ai[c] *= alpha;
    }
    for (int64_t j = j0; j < jend; ++j) {
      const float p = expf(si[j - j0] - new_m);
      lsum += p;  // the softmax's denominator counts every key, kept or dropped
      const float pz = p * keep(a, b, i, j);
      if (pz == 0.0f) continue;
      const float* vj = vs + (j - j0) * a.ev;
      for (int64_t c = 0; c < a.ev; ++c) ai[c] += pz * vj[c];
    }
    m = new_m;
  }
  if (!active) return;
  float* o = out + (b * a.l + i) * a.ev;
  // a row with every key masked attends to nothing: output 0 and no gradient (the CPU kernel's rule)
  const float inv = lsum > 0 ? 1.0f / lsum : 0.0f;
  for (int64_t c = 0; c < a.ev; ++c) o[c] = ai[c] * inv;
  lse[b * a.l + i] = lsum > 0 ? m + logf(lsum) : -INFINITY;
}

/** delta[r] = Σ_c gout[r, c] * out[r, c] (in double): the softmax backward's row term. */
__global__ void attention_delta(const float* gout, const float* out, int64_t rows, int64_t ev, float* delta) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t r = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; r < rows; r += stride) {
    double s = 0;
    for (int64_t c = 0; c < ev; ++c) s += static_cast<double>(gout[r * ev + c]) * out[r * ev + c];
    delta[r] = static_cast<float>(s);
  }
}

/**
 * dS_ij = P_ij (dZ_ij keep_ij - delta_i) * scale with dZ_ij = dO_i . V_j and P_ij = exp(s_ij - lse_i);
 * *z = P_ij keep_ij (dV's weight).
 */
__device__ __forceinline__ float grad_score(const AttentionArgs& a, int64_t b, int64_t i, int64_t j, const float* qi,
                                            const float* kj, const float* doi, const float* vj, float lse_i,
                                            float delta_i, float* z) {
  if (lse_i == -INFINITY) {
    *z = 0.0f;
    return 0.0f;
  }
  const float p = expf(score(a, b, qi, kj, i, j) - lse_i);
  const float kp = keep(a, b, i, j);
  float dz = 0;
  for (int64_t c = 0; c < a.ev; ++c) dz += doi[c] * vj[c];
  *z = p * kp;
  return p * (dz * kp - delta_i) * a.scale;
}

__global__ void attention_dkdv_kernel(AttentionArgs a, int tile, const float* gout, const float* lse,
                                      const float* delta, float* dk, float* dv) {
  extern __shared__ float smem[];
  const int64_t T = tile, pe = a.e + 1, pv = a.ev + 1;
  float* ks = smem;            // [T][pe] this tile's keys
  float* vs = ks + T * pe;     // [T][pv] and values
  float* dks = vs + T * pv;    // [T][pe] their gradients
  float* dvs = dks + T * pe;   // [T][pv]
  float* qs = dvs + T * pv;    // [T][e]  a query tile
  float* dos = qs + T * a.e;   // [T][ev] its output gradients
  float* ls = dos + T * a.ev;  // [T]     its logsumexps
  float* ds = ls + T;          // [T]     its deltas
  const int64_t k_tiles = (a.s + T - 1) / T;
  const int64_t b = blockIdx.x / k_tiles, j0 = (blockIdx.x % k_tiles) * T;
  const int t = threadIdx.x;
  stage_rows(a.k + b * a.s * a.e, j0, a.s, a.e, tile, ks, pe);
  stage_rows(a.v + b * a.s * a.ev, j0, a.s, a.ev, tile, vs, pv);
  for (int64_t x = t; x < T * pe; x += T) dks[x] = 0.0f;
  for (int64_t x = t; x < T * pv; x += T) dvs[x] = 0.0f;
  const int64_t j = j0 + t;
  const bool active = j < a.s;
  const float* kj = ks + t * pe;
  const float* vj = vs + t * pv;
  float* dkj = dks + t * pe;
  float* dvj = dvs + t * pv;
  for (int64_t i0 = a.causal ? j0 : 0; i0 < a.l; i0 += T) {  // causal: queries before j0 see none of these keys
    const int64_t i1 = min(a.l, i0 + T);
    __syncthreads();
    stage_rows(a.q + b * a.l * a.e, i0, a.l, a.e, tile, qs, a.e);
    stage_rows(gout + b * a.l * a.ev, i0, a.l, a.ev, tile, dos, a.ev);
    if (i0 + t < a.l) {
      ls[t] = lse[b * a.l + i0 + t];
      ds[t] = delta[b * a.l + i0 + t];
    }
    __syncthreads();
    if (!active) continue;
    for (int64_t i = i0; i < i1; ++i) {
      if (j >= key_end(a, i)) continue;
      const int64_t r = i - i0;
      const float* qi = qs + r * a.e;
      const float* doi = dos + r * a.ev;
      float z;
      const float dsc = grad_score(a, b, i, j, qi, kj, doi, vj, ls[r], ds[r], &z);
      if (z != 0.0f) {
        for (int64_t c = 0; c < a.ev; ++c) dvj[c] += z * doi[c];
      }
      for (int64_t c = 0; c < a.e; ++c) dkj[c] += dsc * qi[c];
    }
  }
  __syncthreads();
  const int64_t rows = min(T, a.s - j0);
  for (int64_t x = t; x < rows * a.e; x += T) {
    const int64_t r = x / a.e, c = x - r * a.e;
    dk[(b * a.s + j0 + r) * a.e + c] = dks[r * pe + c];
  }
  for (int64_t x = t; x < rows * a.ev; x += T) {
    const int64_t r = x / a.ev, c = x - r * a.ev;
    dv[(b * a.s + j0 + r) * a.ev + c] = dvs[r * pv + c];
  }
}

__global__ void attention_dq_kernel(AttentionArgs a, int tile, const float* gout, const float* lse,
                                    const float* delta, float* dq) {
  extern __shared__ float smem[];
  const int64_t T = tile, pe = a.e + 1, pv = a.ev + 1;
  float* qs = smem;            // [T][pe] this tile's queries
  float* dos = qs + T * pe;    // [T][pv] their output gradients
  float* dqs = dos + T * pv;   // [T][pe] their gradients
  float* ks = dqs + T * pe;    // [T][e]  a key tile
  float* vs = ks + T * a.e;    // [T][ev] and its values
  const int64_t q_tiles = (a.l + T - 1) / T;
  const int64_t b = blockIdx.x / q_tiles, i0 = (blockIdx.x % q_tiles) * T, i1 = min(a.l, i0 + T);
  const int t = threadIdx.x;
  stage_rows(a.q + b * a.l * a.e, i0, a.l, a.e, tile, qs, pe);
  stage_rows(gout + b * a.l * a.ev, i0, a.l, a.ev, tile, dos, pv);
  for (int64_t x = t; x < T * pe; x += T) dqs[x] = 0.0f;
  const int64_t i = i0 + t;
  const bool active = i < a.l;
  const int64_t jlimit = active ? key_end(a, i) : 0;
  const float lse_i = active ? lse[b * a.l + i] : 0.0f, delta_i = active ? delta[b * a.l + i] : 0.0f;
  const float* qi = qs + t * pe;
  const float* doi = dos + t * pv;
  float* dqi = dqs + t * pe;
  for (int64_t j0 = 0; j0 < a.s; j0 += T) {
    if (a.causal && j0 > i1 - 1) break;
    const int64_t j1 = min(a.s, j0 + T);
    __syncthreads();
    stage_rows(a.k + b * a.s * a.e, j0, a.s, a.e, tile, ks, a.e);
    stage_rows(a.v + b * a.s * a.ev, j0, a.s, a.ev, tile, vs, a.ev);
    __syncthreads();
    const int64_t jend = min(j1, jlimit);
    for (int64_t j = j0; j < jend; ++j) {
      const float* kj = ks + (j - j0) * a.e;
      float z;
      const float dsc = grad_score(a, b, i, j, qi, kj, doi, vs + (j - j0) * a.ev, lse_i, delta_i, &z);
      for (int64_t c = 0; c < a.e; ++c) dqi[c] += dsc * kj[c];
    }
  }
  __syncthreads();
  const int64_t rows = i1 - i0;
  for (int64_t x = t; x < rows * a.e; x += T) {
    const int64_t r = x / a.e, c = x - r * a.e;
    dq[(b * a.l + i0 + r) * a.e + c] = dqs[r * pe + c];
  }
}

/** The kernel arguments, with the mask offsets copied to the device (kept alive by `offsets`). */
AttentionArgs make_args(const kernels::AttentionShape& sh, const Tensor& q, const Tensor& k, const Tensor& v,
                        const Tensor& mask, cudaStream_t stream, Tensor& offsets) {
  AttentionArgs a{};
  a.q = q.data<float>();
  a.k = k.data<float>();
  a.v = v.data<float>();
  a.bh = sh.bh;
  a.l = sh.l;
  a.s = sh.s;
  a.e = sh.e;
  a.ev = sh.ev;
  a.scale = static_cast<float>(sh.scale);
  a.keep_scale = sh.dropout_p < 1 ? static_cast<float>(1.0 / (1.0 - sh.dropout_p)) : 0.0f;
  a.causal = sh.causal;
  a.dropout_p = sh.dropout_p;
  a.dropout_seed = sh.dropout_seed;
  if (mask.defined()) {
    a.mask = mask.data<float>();
    a.mask_row_stride = sh.mask_row_stride;
    a.mask_col_stride = sh.mask_col_stride;
    offsets = Tensor::empty({std::max<int64_t>(sh.bh, 1)}, DType::Int64, q.device());
    // From pageable host memory the copy returns once the data is staged: the host array may go.
    DDP4J_CUDA_CHECK(cudaMemcpyAsync(offsets.raw_data(), sh.mask_offsets, sizeof(int64_t) * sh.bh,
                                     cudaMemcpyHostToDevice, stream));
    a.mask_offsets = offsets.data<int64_t>();
  }
  return a;
}

/**
 * The largest tile (64, 32, ..., 1) whose shared memory, floats_of(tile) floats, fits the device;
 * raises the kernel's dynamic shared memory limit when it needs more than the default 48 KiB.
 */
template <class Kernel>
int pick_tile(Kernel kernel, int64_t (*floats_of)(int64_t, int64_t, int64_t), int64_t e, int64_t ev, int device,
              const char* op, size_t& bytes) {
  int optin = 0;
  DDP4J_CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  int tile = kMaxTile;
  while (tile > 1 && floats_of(tile, e, ev) * 4 > optin) tile /= 2;
  bytes = static_cast<size_t>(floats_of(tile, e, ev)) * sizeof(float);
  DDP4J_CHECK_ARG(bytes <= static_cast<size_t>(optin), op, ": head dims E = ", e, " and Ev = ", ev,
                  " need more shared memory than the GPU's ", optin, " bytes per block");
  if (bytes > 48 * 1024) {
    DDP4J_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                          static_cast<int>(bytes)));
  }
  return tile;
}

unsigned tiles_grid(int64_t bh, int64_t n, int tile, const char* op) {
  const int64_t blocks = bh * ((n + tile - 1) / tile);
  DDP4J_CHECK_ARG(blocks <= 0x7fffffff, op, ": ", bh, " batch-heads of length ", n, " are too many for one grid");
  return static_cast<unsigned>(blocks);
}

void attention_forward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask,
                       const kernels::AttentionShape& sh, Tensor& out, Tensor& lse) {
  if (sh.bh * sh.l == 0) return;
  const char* op = "scaled_dot_product_attention";
  LaunchContext ctx(out);
  Tensor offsets;
  const AttentionArgs a = make_args(sh, q, k, v, mask, ctx.stream, offsets);
  size_t bytes;
  const int tile = pick_tile(attention_forward_kernel, forward_floats, sh.e, sh.ev, ctx.device, op, bytes);
  attention_forward_kernel<<<tiles_grid(sh.bh, sh.l, tile, op), tile, bytes, ctx.stream>>>(
      a, tile, out.data<float>(), lse.data<float>());
  DDP4J_CUDA_CHECK_LAUNCH(op);
}

void attention_backward(const Tensor& gout, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask,
                        const Tensor& out, const Tensor& lse, const kernels::AttentionShape& sh, Tensor& dq,
                        Tensor& dk, Tensor& dv) {
  const char* op = "scaled_dot_product_attention_backward";
  LaunchContext ctx(dq);
  if (sh.bh * sh.l == 0) {  // no queries: the keys and values get no gradient
    if (dk.numel() > 0) DDP4J_CUDA_CHECK(cudaMemsetAsync(dk.raw_data(), 0, dk.nbytes(), ctx.stream));
    if (dv.numel() > 0) DDP4J_CUDA_CHECK(cudaMemsetAsync(dv.raw_data(), 0, dv.nbytes(), ctx.stream));
    return;
  }
  Tensor offsets;
  const AttentionArgs a = make_args(sh, q, k, v, mask, ctx.stream, offsets);
  Tensor delta = Tensor::empty({sh.bh * sh.l}, DType::Float32, q.device());
  attention_delta<<<grid_for(sh.bh * sh.l, 256), 256, 0, ctx.stream>>>(gout.data<float>(), out.data<float>(),
                                                                       sh.bh * sh.l, sh.ev, delta.data<float>());
  DDP4J_CUDA_CHECK_LAUNCH(op);
  size_t bytes;
  if (sh.s > 0) {
    const int tile = pick_tile(attention_dkdv_kernel, dkdv_floats, sh.e, sh.ev, ctx.device, op, bytes);
    attention_dkdv_kernel<<<tiles_grid(sh.bh, sh.s, tile, op), tile, bytes, ctx.stream>>>(
        a, tile, gout.data<float>(), lse.data<float>(), delta.data<float>(), dk.data<float>(), dv.data<float>());
    DDP4J_CUDA_CHECK_LAUNCH(op);
  }
  const int tile = pick_tile(attention_dq_kernel, dq_floats, sh.e, sh.ev, ctx.device, op, bytes);
  attention_dq_kernel<<<tiles_grid(sh.bh, sh.l, tile, op), tile, bytes, ctx.stream>>>(
      a, tile, gout.data<float>(), lse.data<float>(), delta.data<float>(), dq.data<float>());
  DDP4J_CUDA_CHECK_LAUNCH(op);
}

}  // namespace

DDP4J_REGISTER_KERNEL(attention_forward, CUDA, attention_forward);
DDP4J_REGISTER_KERNEL(attention_backward, CUDA, attention_backward);

}  // namespace ddp4j::cuda
