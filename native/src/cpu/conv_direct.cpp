// Direct stride-1 convolution with AVX-512 register tiles, no im2col.
//
// Why: at the two-conv net's shapes (K = 16 or 32 output channels, 14..28 wide rows) OpenBLAS
// reaches only part of its peak on the small per-image GEMMs, and im2col / col2im / the layout
// transposes around them cost as much again. Here each output tile keeps NQ output pixels x 16*KV
// channels in zmm accumulators and streams the input straight from a zero-padded copy of one
// image (L1-resident), so every loaded input value feeds KV FMAs and nothing is unfolded.
//
//  - forward: y[k, p, q] = Σ_{c,r,s} w[k, c, r, s] · xpad[c, p+r, q+s]: vectorised over k
//    (weights transposed to [C, R, S, K]), one broadcast input value per (pixel, c, r, s).
//  - input gradient: stride 1 makes it a forward convolution of gy, zero-padded by (R-1-ph,
//    S-1-pw), with the weights flipped and transposed: the same tile kernel, no col2im.
//  - weight gradient: gw[k, c, r, s] += Σ_{p,q} gy[k, p, q] · xpad[c, p+r, q+s], vectorised over
//    k (gy transposed per image to [P*Q, K]) with RB x S accumulators per (c, row block).
//
// Channels are padded to a multiple of 16 with zero weights, so any K and C work; accumulation
// is in float32 in the same order a GEMM over (c, r, s) would use. Functions that use AVX-512
// carry target attributes: the library still loads and runs (the GEMM path) on AVX2-only CPUs.
#include "cpu/conv_direct.h"

#include <immintrin.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <utility>
#include <vector>

#include "core/settings.h"
#include "ddp4j/parallel.h"

namespace ddp4j::cpu::direct {
namespace {

#define DDP4J_AVX512 __attribute__((target("avx512f")))
// The tile kernels' inner loops read overlapping input windows (row[j + s] for every s). At -O3
// GCC's predictive commoning then carries those scalars from one s to the next through stack
// slots, which costs more loads and stores than it saves and pushes an accumulator out of the
// registers; the tiles are written so that every value is one broadcast load instead.
#define DDP4J_TILE __attribute__((target("avx512f"), optimize("no-predictive-commoning")))

constexpr int kMaxAcc = 28;  // zmm accumulators per tile; the rest of the 32 hold weights and inputs
// Backward: at most this many chunks of images with weight-gradient partials of their own, and
// at most kPartialFloats floats of partials in all (at least one chunk).
constexpr int64_t kMaxChunks = 16;
constexpr int64_t kPartialFloats = int64_t{1} << 22;

std::atomic<bool>& enabled_flag() {
  static std::atomic<bool> flag{[] {
    const auto env = settings::get("DDP4J_CONV_DIRECT");  // "0" turns it off (Java's Setting reads false, off, no)
    return __builtin_cpu_supports("avx512f") && !(env && *env == "0");
  }()};
  return flag;
}

int64_t round16(int64_t n) { return (n + 15) / 16 * 16; }

template <typename T>
T* grow(std::vector<T>& v, int64_t n) {
  if (static_cast<int64_t>(v.size()) < n) v.resize(static_cast<size_t>(n));
  return v.data();
}

struct Workspace {
  std::vector<float> wt, wtx, pad, gpad, gyt, gwt, tile;
  std::vector<double> acc;
};

Workspace& workspace() {
  thread_local Workspace ws;
  return ws;
}

// ---- forward tile: NQ pixels of one output row x 16*KV channels ---------------------------------

/** tmp[j][0..16KV) = Σ_{c,r,s} wt[c, r, s, 0..16KV) · in[c, r, j + s] for j < NQ. */
template <int KV, int NQ>
DDP4J_TILE void fwd_tile(const float* in, int64_t plane, int64_t Wp, int64_t Cin, int64_t R, int64_t S,
                           const float* wt, int64_t Kp, float* tmp) {
  __m512 acc[NQ][KV];
#pragma GCC unroll 28
  for (int j = 0; j < NQ; ++j) {
#pragma GCC unroll 2
    for (int v = 0; v < KV; ++v) acc[j][v] = _mm512_setzero_ps();
  }
  for (int64_t c = 0; c < Cin; ++c) {
    for (int64_t r = 0; r < R; ++r) {
      const float* row = in + c * plane + r * Wp;
      const float* wr = wt + (c * R + r) * S * Kp;
      for (int64_t s = 0; s < S; ++s) {
        __m512 wv[KV];
#pragma GCC unroll 2
        for (int v = 0; v < KV; ++v) wv[v] = _mm512_loadu_ps(wr + s * Kp + 16 * v);
#pragma GCC unroll 28
        for (int j = 0; j < NQ; ++j) {
          const __m512 xb = _mm512_set1_ps(row[j + s]);
#pragma GCC unroll 2
          for (int v = 0; v < KV; ++v) acc[j][v] = _mm512_fmadd_ps(wv[v], xb, acc[j][v]);
        }
      }
    }
  }
#pragma GCC unroll 28
  for (int j = 0; j < NQ; ++j) {
#pragma GCC unroll 2
    for (int v = 0; v < KV; ++v) _mm512_storeu_ps(tmp + (j * KV + v) * 16, acc[j][v]);
  }
}

/**
 * fwd_tile<1, NQ> for two output rows at once: tmp[row][j][0..16) for row < 2, j < NQ, where row 1
 * is the output row below row 0. Input row i feeds kernel row i of output row 0 and kernel row
 * i - 1 of output row 1, so each broadcast input value serves two FMAs (one weight vector each);
 * every accumulator still sums over (c, r, s) in the same order as fwd_tile.
 */
template <int NQ>
DDP4J_TILE void fwd_tile_2rows(const float* in, int64_t plane, int64_t Wp, int64_t Cin, int64_t R, int64_t S,
                               const float* wt, int64_t Kp, float* tmp) {
  __m512 a0[NQ], a1[NQ];
#pragma GCC unroll 14
  for (int j = 0; j < NQ; ++j) {
    a0[j] = _mm512_setzero_ps();
    a1[j] = _mm512_setzero_ps();
  }
  for (int64_t c = 0; c < Cin; ++c) {
    const float* chan = in + c * plane;
    const float* wc = wt + c * R * S * Kp;
    // input row 0: kernel row 0 of output row 0 only
    for (int64_t s = 0; s < S; ++s) {
      const __m512 w0 = _mm512_loadu_ps(wc + s * Kp);
#pragma GCC unroll 14
      for (int j = 0; j < NQ; ++j) a0[j] = _mm512_fmadd_ps(w0, _mm512_set1_ps(chan[j + s]), a0[j]);
    }
    for (int64_t i = 1; i < R; ++i) {
      const float* row = chan + i * Wp;
      const float* wr0 = wc + i * S * Kp;
      const float* wr1 = wr0 - S * Kp;
      for (int64_t s = 0; s < S; ++s) {
        const __m512 w0 = _mm512_loadu_ps(wr0 + s * Kp), w1 = _mm512_loadu_ps(wr1 + s * Kp);
#pragma GCC unroll 14
        for (int j = 0; j < NQ; ++j) {
          const __m512 xb = _mm512_set1_ps(row[j + s]);
          a0[j] = _mm512_fmadd_ps(w0, xb, a0[j]);
          a1[j] = _mm512_fmadd_ps(w1, xb, a1[j]);
        }
      }
    }
    // input row R: kernel row R - 1 of output row 1 only
    const float* row = chan + R * Wp;
    const float* wr1 = wc + (R - 1) * S * Kp;
    for (int64_t s = 0; s < S; ++s) {
      const __m512 w1 = _mm512_loadu_ps(wr1 + s * Kp);
#pragma GCC unroll 14
      for (int j = 0; j < NQ; ++j) a1[j] = _mm512_fmadd_ps(w1, _mm512_set1_ps(row[j + s]), a1[j]);
    }
  }
#pragma GCC unroll 14
  for (int j = 0; j < NQ; ++j) {
    _mm512_storeu_ps(tmp + j * 16, a0[j]);
    _mm512_storeu_ps(tmp + (NQ + j) * 16, a1[j]);
  }
}

using FwdTile = void (*)(const float*, int64_t, int64_t, int64_t, int64_t, int64_t, const float*, int64_t, float*);

template <int KV, size_t... I>
constexpr std::array<FwdTile, sizeof...(I)> fwd_tiles(std::index_sequence<I...>) {
  return {&fwd_tile<KV, static_cast<int>(I) + 1>...};
}

template <size_t... I>
constexpr std::array<FwdTile, sizeof...(I)> fwd_tiles_2rows(std::index_sequence<I...>) {
  return {&fwd_tile_2rows<static_cast<int>(I) + 1>...};
}

// GCC 12 reports its own _mm512_undefined_ps() (the pass-through of the unmasked shuffles) as
// "may be used uninitialized"; a known false positive.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

/**
 * In-register 16x16 transpose: on return r[i] lane j holds what r[j] lane i held. Pure data
 * movement (unpack / shuffle within and across 128-bit lanes), so values are bit-for-bit kept.
 */
DDP4J_AVX512 inline void transpose16x16(__m512 r[16]) {
  __m512 t[16], u[16];
  for (int i = 0; i < 8; ++i) {
    t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  // u[4i + j], 128-bit lane L: column 4L + j of rows 4i..4i+3
  for (int i = 0; i < 4; ++i) {
    u[4 * i + 0] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], 0x44);
    u[4 * i + 1] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], 0xEE);
    u[4 * i + 2] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0x44);
    u[4 * i + 3] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0xEE);
  }
  for (int j = 0; j < 4; ++j) {
    const __m512 v0 = _mm512_shuffle_f32x4(u[j], u[4 + j], 0x88), v1 = _mm512_shuffle_f32x4(u[j], u[4 + j], 0xDD);
    const __m512 w0 = _mm512_shuffle_f32x4(u[8 + j], u[12 + j], 0x88);
    const __m512 w1 = _mm512_shuffle_f32x4(u[8 + j], u[12 + j], 0xDD);
    r[j] = _mm512_shuffle_f32x4(v0, w0, 0x88);
    r[8 + j] = _mm512_shuffle_f32x4(v0, w0, 0xDD);
    r[4 + j] = _mm512_shuffle_f32x4(v1, w1, 0x88);
    r[12 + j] = _mm512_shuffle_f32x4(v1, w1, 0xDD);
  }
}

/**
 * out[k * ld + j] = tmp[j][k] (+ bias[k]) for k < kn, j < m: the tile back to [K, P, Q] layout.
 * out[k * ld + j] for m <= j < room are outputs that the caller writes later, so a 16-float store
 * may cover them (masked stores are slow on some CPUs); past room, stores are masked.
 */
DDP4J_AVX512 void scatter_tile(const float* tmp, int KV, int64_t m, int64_t kn, const float* bias, float* out,
                               int64_t ld, int64_t room) {
  for (int64_t j0 = 0; j0 < m; j0 += 16) {
    const int64_t n = std::min<int64_t>(16, m - j0);
    const __mmask16 mask = static_cast<__mmask16>(n == 16 ? 0xFFFF : (1u << n) - 1);
    for (int64_t k0 = 0; k0 < kn; k0 += 16) {
      __m512 r[16];
      for (int64_t j = 0; j < 16; ++j) {
        r[j] = j < n ? _mm512_loadu_ps(tmp + (j0 + j) * 16 * KV + k0) : _mm512_setzero_ps();
      }
      transpose16x16(r);
      const int64_t nk = std::min<int64_t>(16, kn - k0);
      for (int64_t k = 0; k < nk; ++k) {
        __m512 v = r[k];
        if (bias) v = _mm512_add_ps(v, _mm512_set1_ps(bias[k0 + k]));
        if (j0 + 16 <= room) {
          _mm512_storeu_ps(out + (k0 + k) * ld + j0, v);
        } else {
          _mm512_mask_storeu_ps(out + (k0 + k) * ld + j0, mask, v);
        }
      }
    }
  }
}

/**
 * One image: out[k, p, q] (k < Kout) = Σ wt[c, r, s, k] · in[c, p+r, q+s] (+ bias[k]), where in is
 * [Cin, Hp, Wp] already padded and wt is [Cin, R, S, Kp] with Kp = round16(Kout).
 */
void conv_image(const float* in, int64_t Cin, int64_t Hp, int64_t Wp, const float* wt, int64_t Kout, int64_t R,
                int64_t S, const float* bias, float* out, int64_t P, int64_t Q, float* tmp) {
  static const auto tiles1 = fwd_tiles<1>(std::make_index_sequence<kMaxAcc>{});
  static const auto tiles2 = fwd_tiles<2>(std::make_index_sequence<kMaxAcc / 2>{});
  static const auto tiles1x2 = fwd_tiles_2rows(std::make_index_sequence<kMaxAcc / 2>{});
  const int64_t Kp = round16(Kout), plane = Hp * Wp, PQ = P * Q;
  for (int64_t kb = 0; kb < Kp;) {
    const int KV = Kp - kb >= 32 ? 2 : 1;
    // 16 channels: pairs of output rows (fwd_tile_2rows), at most kMaxAcc / 2 pixels per row
    const bool two_rows = KV == 1 && P >= 2;
    const int64_t max_nq = two_rows ? kMaxAcc / 2 : kMaxAcc / KV, ntiles = (Q + max_nq - 1) / max_nq;
    const int64_t nq = (Q + ntiles - 1) / ntiles;  // balanced tiles
    const int64_t kn = std::min<int64_t>(16 * KV, Kout - kb);
    const float* b = bias ? bias + kb : nullptr;
    for (int64_t p = 0; p < P;) {
      const int64_t rows = two_rows && p + 1 < P ? 2 : 1;
      for (int64_t q0 = 0; q0 < Q; q0 += nq) {
        const int64_t m = std::min(nq, Q - q0);
        float* o = out + kb * PQ + p * Q + q0;
        if (rows == 2) {
          tiles1x2[m - 1](in + p * Wp + q0, plane, Wp, Cin, R, S, wt + kb, Kp, tmp);
          // Written later: the rest of row p, and from q0 = 0 on, row p + 1 (this tile's second
          // half, then later tiles) and the rows below; the second half: everything after it.
          scatter_tile(tmp, 1, m, kn, b, o, PQ, q0 == 0 ? PQ - p * Q : Q - q0);
          scatter_tile(tmp + m * 16, 1, m, kn, b, o + Q, PQ, PQ - (p + 1) * Q - q0);
        } else {
          const FwdTile f = KV == 2 ? tiles2[m - 1] : tiles1[m - 1];
          f(in + p * Wp + q0, plane, Wp, Cin, R, S, wt + kb, Kp, tmp);
          scatter_tile(tmp, KV, m, kn, b, o, PQ, PQ - p * Q - q0);  // one row at a time: all after it
        }
      }
      p += rows;
    }
    kb += 16 * KV;
  }
}

/** Floats after a padded image that pad_into may overwrite with zeros. */
constexpr int64_t kPadSlack = 16;

/**
 * Copies x[C, H, W] into the interior of pad[C, H + 2ph, W + 2pw], whose border is already zero.
 * Rows are copied in 16-float vectors; the last, partial vector of a row is stored whole with
 * zeros beyond W, which land on border cells (zero anyway) or interior cells that later rows
 * overwrite, and up to kPadSlack floats past the image (the buffer holds that slack).
 */
DDP4J_AVX512 void pad_into(const float* x, int64_t C, int64_t H, int64_t W, int64_t ph, int64_t pw, float* pad) {
  const int64_t Hp = H + 2 * ph, Wp = W + 2 * pw, tail = W % 16;
  const __mmask16 tail_mask = static_cast<__mmask16>((1u << tail) - 1);
  for (int64_t c = 0; c < C; ++c) {
    for (int64_t h = 0; h < H; ++h) {
      const float* src = x + (c * H + h) * W;
      float* dst = pad + (c * Hp + h + ph) * Wp + pw;
      int64_t w = 0;
      for (; w + 16 <= W; w += 16) _mm512_storeu_ps(dst + w, _mm512_loadu_ps(src + w));
      if (tail) _mm512_storeu_ps(dst + w, _mm512_maskz_loadu_ps(tail_mask, src + w));
    }
  }
}

// ---- weight gradient: RB kernel rows x S kernel columns x 16*KV channels -------------------------

/**
 * gwt[rb, s, 0..16KV) += Σ_{p,q} gyt[p*Q + q, 0..16KV) · in[p + rb, q + s] for rb < RB, s < S, where in
 * is one channel of the padded input starting at kernel row r0, and gwt is [R, S, Kp] at row r0.
 * The sum starts from zero and is added to gwt at the end: callers pass blocks of output rows so
 * that no float32 accumulator sums more than a few hundred products (accuracy as a blocked GEMM).
 */
template <int KV, int S, int RB>
DDP4J_TILE void gw_rows(const float* in, int64_t Wp, const float* gyt, int64_t Kp, int64_t P, int64_t Q,
                          float* gwt) {
  __m512 acc[RB][S][KV];
#pragma GCC unroll 4
  for (int rb = 0; rb < RB; ++rb) {
#pragma GCC unroll 7
    for (int s = 0; s < S; ++s) {
#pragma GCC unroll 2
      for (int v = 0; v < KV; ++v) acc[rb][s][v] = _mm512_setzero_ps();
    }
  }
  for (int64_t p = 0; p < P; ++p) {
    const float* g = gyt + p * Q * Kp;
    const float* row = in + p * Wp;
    for (int64_t q = 0; q < Q; ++q, g += Kp) {
      __m512 gv[KV];
#pragma GCC unroll 2
      for (int v = 0; v < KV; ++v) gv[v] = _mm512_loadu_ps(g + 16 * v);
#pragma GCC unroll 4
      for (int rb = 0; rb < RB; ++rb) {
#pragma GCC unroll 7
        for (int s = 0; s < S; ++s) {
          const __m512 xb = _mm512_set1_ps(row[rb * Wp + q + s]);
#pragma GCC unroll 2
          for (int v = 0; v < KV; ++v) acc[rb][s][v] = _mm512_fmadd_ps(gv[v], xb, acc[rb][s][v]);
        }
      }
    }
  }
#pragma GCC unroll 4
  for (int rb = 0; rb < RB; ++rb) {
#pragma GCC unroll 7
    for (int s = 0; s < S; ++s) {
#pragma GCC unroll 2
      for (int v = 0; v < KV; ++v) {
        float* dst = gwt + (rb * S + s) * Kp + 16 * v;
        _mm512_storeu_ps(dst, _mm512_add_ps(_mm512_loadu_ps(dst), acc[rb][s][v]));
      }
    }
  }
}

using GwRows = void (*)(const float*, int64_t, const float*, int64_t, int64_t, int64_t, float*);
constexpr int kMaxS = 7;

template <int KV, int S>
GwRows gw_rows_for(int rb) {
  return rb >= 4 ? &gw_rows<KV, S, 4> : rb == 3 ? &gw_rows<KV, S, 3> : rb == 2 ? &gw_rows<KV, S, 2> : &gw_rows<KV, S, 1>;
}

template <int KV>
GwRows gw_rows_for(int64_t S, int rb) {
  switch (S) {
    case 1: return gw_rows_for<KV, 1>(rb);
    case 2: return gw_rows_for<KV, 2>(rb);
    case 3: return gw_rows_for<KV, 3>(rb);
    case 4: return gw_rows_for<KV, 4>(rb);
    case 5: return gw_rows_for<KV, 5>(rb);
    case 6: return gw_rows_for<KV, 6>(rb);
    default: return gw_rows_for<KV, 7>(rb);
  }
}

/**
 * Kernel rows per gw_rows call: as many as keep RB * S * KV accumulators within 24 registers, up
 * to 4. A 3x3 kernel's three rows go in one call (18 accumulators at KV = 2), not 2 + 1: a one-row
 * call has only S * KV = 6 independent FMA chains, and a CPU with two FMA units of 4 cycles'
 * latency needs 8 to stay busy (on an Intel Xeon the weight gradient ran at half the forward's rate).
 */
int rows_per_block(int64_t remaining, int64_t S, int KV) {
  const int64_t fit = std::max<int64_t>(1, 24 / (S * KV));
  return static_cast<int>(std::min<int64_t>({remaining, fit, 4}));
}

/**
 * gyt[i, k] = gy[k, i] for k < K, i < PQ (row stride Kp), and zero for K <= k < Kp: 16x16 blocks
 * transposed in registers.
 */
DDP4J_AVX512 void transpose_gy(const float* gy, int64_t K, int64_t PQ, int64_t Kp, float* gyt) {
  for (int64_t k0 = 0; k0 < Kp; k0 += 16) {
    const int64_t nk = std::max<int64_t>(0, std::min<int64_t>(16, K - k0));
    for (int64_t i0 = 0; i0 < PQ; i0 += 16) {
      const int64_t ni = std::min<int64_t>(16, PQ - i0);
      const __mmask16 mask = static_cast<__mmask16>(ni == 16 ? 0xFFFF : (1u << ni) - 1);
      __m512 r[16];
      for (int64_t k = 0; k < 16; ++k) {
        const float* src = gy + (k0 + k) * PQ + i0;
        r[k] = k >= nk ? _mm512_setzero_ps() : ni == 16 ? _mm512_loadu_ps(src) : _mm512_maskz_loadu_ps(mask, src);
      }
      transpose16x16(r);
      for (int64_t i = 0; i < ni; ++i) _mm512_storeu_ps(gyt + (i0 + i) * Kp + k0, r[i]);
    }
  }
}

#pragma GCC diagnostic pop

/** Σ p[0..n): 16 float32 lanes (vectorised; a few hundred terms each), added in double. */
double plane_sum(const float* p, int64_t n) {
  constexpr int kLanes = 16;
  float lanes[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int l = 0; l < kLanes; ++l) lanes[l] += p[i + l];
  }
  double s = 0;
  for (; i < n; ++i) s += p[i];
  for (int l = 0; l < kLanes; ++l) s += lanes[l];
  return s;
}

}  // namespace

bool enabled() { return enabled_flag().load(std::memory_order_relaxed); }

void set_enabled(bool on) { enabled_flag().store(on && __builtin_cpu_supports("avx512f")); }

bool forward_supported(const Geometry& g) {
  // Rows of at most 7 outputs with many channels (ResNet's last stage at 224x224) run 3x faster
  // as GEMMs (3x3, 512 channels, 7x7: ~23 vs ~72 GFLOP/s). Elsewhere the tiles match or beat the
  // GEMM path; 1x1 kernels at 56x56 or 3x3 at 14x14 would gain little from it.
  return g.K >= 8 && !(g.Q <= 7 && g.C * g.K > 64 * 64);
}

bool backward_supported(const Geometry& g, bool need_gx) {
  // Beyond the two-conv net's channel counts the GEMM path's blocked weight gradient wins.
  return g.K >= 8 && g.S <= kMaxS && g.R * g.S > 1 && g.C * g.K <= 64 * 64 &&
         (!need_gx || (g.C >= 8 && g.ph <= g.R - 1 && g.pw <= g.S - 1));
}

void forward(const float* x, const float* w, const float* b, float* y, const Geometry& g) {
  const int64_t Kp = round16(g.K), CRS = g.C * g.R * g.S, Hp = g.H + 2 * g.ph, Wp = g.W + 2 * g.pw;
  float* wt = grow(workspace().wt, CRS * Kp);  // the caller's, read by every worker
  std::fill_n(wt, CRS * Kp, 0.f);
  for (int64_t k = 0; k < g.K; ++k) {
    for (int64_t i = 0; i < CRS; ++i) wt[i * Kp + k] = w[k * CRS + i];
  }
  // One image per unit; each thread pads into its own buffer.
  parallel_for(0, g.N, 1, [&](int64_t n0, int64_t n1) {
    Workspace& ws = workspace();
    float* pad = grow(ws.pad, g.C * Hp * Wp + kPadSlack);
    std::fill_n(pad, g.C * Hp * Wp, 0.f);
    float* tmp = grow(ws.tile, kMaxAcc * 16);
    for (int64_t n = n0; n < n1; ++n) {
      pad_into(x + n * g.C * g.H * g.W, g.C, g.H, g.W, g.ph, g.pw, pad);
      conv_image(pad, g.C, Hp, Wp, wt, g.K, g.R, g.S, b, y + n * g.K * g.P * g.Q, g.P, g.Q, tmp);
    }
  });
}

void backward(const float* gy, const float* x, const float* w, float* gx, float* gw, float* gb, const Geometry& g) {
  Workspace& caller = workspace();
  const int64_t Kp = round16(g.K), Cp = round16(g.C), RS = g.R * g.S, CRS = g.C * RS, PQ = g.P * g.Q;
  const int64_t Hp = g.H + 2 * g.ph, Wp = g.W + 2 * g.pw;
  // Fixed chunks of images (the count depends on the shapes only), each summing its own
  // weight-gradient partial gwt[CRS, Kp] and bias partial; the partials are added in chunk order,
  // so the result does not depend on the thread count.
  const int64_t chunks = std::clamp<int64_t>(kPartialFloats / std::max<int64_t>(1, CRS * Kp), 1,
                                             std::min<int64_t>(std::max<int64_t>(g.N, 1), kMaxChunks));
  float* gwt = grow(caller.gwt, chunks * CRS * Kp);
  std::fill_n(gwt, chunks * CRS * Kp, 0.f);
  double* acc = grow(caller.acc, chunks * g.K);
  std::fill_n(acc, chunks * g.K, 0.0);
  // Input gradient as a forward convolution: gy padded by (R-1-ph, S-1-pw), weights
  // wtx[k, r', s', c] = w[k, c, R-1-r', S-1-s'].
  const int64_t gph = g.R - 1 - g.ph, gpw = g.S - 1 - g.pw, gHp = g.P + 2 * gph, gWp = g.Q + 2 * gpw;
  float* wtx = nullptr;
  if (gx) {
    wtx = grow(caller.wtx, g.K * RS * Cp);
    std::fill_n(wtx, g.K * RS * Cp, 0.f);
    for (int64_t k = 0; k < g.K; ++k) {
      for (int64_t c = 0; c < g.C; ++c) {
        for (int64_t r = 0; r < g.R; ++r) {
          for (int64_t s = 0; s < g.S; ++s) {
            wtx[((k * g.R + (g.R - 1 - r)) * g.S + (g.S - 1 - s)) * Cp + c] = w[((k * g.C + c) * g.R + r) * g.S + s];
          }
        }
      }
    }
  }
  // Output rows per weight-gradient block: about 256 pixels, at least one row.
  const int64_t prows = std::max<int64_t>(1, 256 / std::max<int64_t>(1, g.Q));
  parallel_for(0, chunks, 1, [&](int64_t c0, int64_t c1) {
    Workspace& ws = workspace();
    float* pad = grow(ws.pad, g.C * Hp * Wp + kPadSlack);
    std::fill_n(pad, g.C * Hp * Wp, 0.f);
    float* gyt = grow(ws.gyt, PQ * Kp);  // transpose_gy writes all of it, channels K..Kp as zero
    float* tmp = grow(ws.tile, kMaxAcc * 16);
    float* gpad = nullptr;
    if (gx) {
      gpad = grow(ws.gpad, g.K * gHp * gWp + kPadSlack);
      std::fill_n(gpad, g.K * gHp * gWp, 0.f);
    }
    for (int64_t c = c0; c < c1; ++c) {
      float* gwc = gwt + c * CRS * Kp;
      double* accc = acc + c * g.K;
      for (int64_t n = c * g.N / chunks; n < (c + 1) * g.N / chunks; ++n) {
        const float* gyn = gy + n * g.K * PQ;
        transpose_gy(gyn, g.K, PQ, Kp, gyt);
        for (int64_t k = 0; k < g.K; ++k) accc[k] += plane_sum(gyn + k * PQ, PQ);
        pad_into(x + n * g.C * g.H * g.W, g.C, g.H, g.W, g.ph, g.pw, pad);
        for (int64_t p0 = 0; p0 < g.P; p0 += prows) {
          const int64_t np = std::min(prows, g.P - p0);
          for (int64_t kb = 0; kb < Kp;) {
            const int KV = Kp - kb >= 32 ? 2 : 1;
            for (int64_t ch = 0; ch < g.C; ++ch) {
              for (int64_t r = 0; r < g.R;) {
                const int rb = rows_per_block(g.R - r, g.S, KV);
                const GwRows f = KV == 2 ? gw_rows_for<2>(g.S, rb) : gw_rows_for<1>(g.S, rb);
                f(pad + (ch * Hp + r + p0) * Wp, Wp, gyt + p0 * g.Q * Kp + kb, Kp, np, g.Q,
                  gwc + (ch * RS + r * g.S) * Kp + kb);
                r += rb;
              }
            }
            kb += 16 * KV;
          }
        }
        if (gx) {
          pad_into(gyn, g.K, g.P, g.Q, gph, gpw, gpad);
          conv_image(gpad, g.K, gHp, gWp, wtx, g.C, g.R, g.S, nullptr, gx + n * g.C * g.H * g.W, g.H, g.W, tmp);
        }
      }
    }
  });
  parallel_for(0, g.K, 1, [&](int64_t k0, int64_t k1) {
    for (int64_t k = k0; k < k1; ++k) {
      for (int64_t i = 0; i < CRS; ++i) {
        float s = gwt[i * Kp + k];
        for (int64_t c = 1; c < chunks; ++c) s += gwt[(c * CRS + i) * Kp + k];
        gw[k * CRS + i] = s;
      }
      if (gb) {
        double s = 0;
        for (int64_t c = 0; c < chunks; ++c) s += acc[c * g.K + k];
        gb[k] = static_cast<float>(s);
      }
    }
  });
}

}  // namespace ddp4j::cpu::direct
