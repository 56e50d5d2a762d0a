// CPU scaled dot-product attention, flash-attention's algorithm on GEMM tiles: the forward walks
// blocks of keys for a block of queries with an online softmax (running max m, running sum l,
// rescaled accumulator), so no L x S matrix exists; it saves the output and each row's logsumexp.
// Scores (Q K^T) and the products with V are single-threaded GEMMs on kBlock x kBlock tiles; the
// exponentials run vectorised on the tile. Operands are read, and gradients written, through
// their row layouts (AttentionShape), so q | k | v packed in one projection's output need no
// copy. The backward recomputes the probabilities tile by tile from the logsumexp: one pass over
// key blocks writes dK and dV (each key's sums run over the query blocks in order), one over
// query blocks writes dQ. Every output tile is computed by one
// work item in a fixed order, so the bits do not depend on the thread count. Causal tiles above
// the diagonal are skipped. Dropout's keep mask is a counter-based hash of (seed, batch-head, i,
// j): recomputed, never stored.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "cpu/gemm.h"
#include "cpu/vector_math.h"
#include "ddp4j/dispatch.h"
#include "ddp4j/parallel.h"
#include "ddp4j/transformer_kernels.h"

namespace ddp4j::cpu {
namespace {

constexpr int64_t kBlock = 64;  // queries and keys per tile: GEMMs of 64 x 64 x head size
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

/** SplitMix64's finaliser: a well-mixed 64-bit hash of z. */
inline uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/** Zeroes `rows` rows of `width` floats, `ld` apart. */
void zero_rows(float* p, int64_t rows, int64_t width, int64_t ld) {
  for (int64_t r = 0; r < rows; ++r) std::fill(p + r * ld, p + r * ld + width, 0.0f);
}

/** x[c] = exp(x[c] - shift) for c < n (-inf gives 0), vectorised. */
DDP4J_VECTOR_CLONES void exp_shifted(float* x, int64_t n, float shift) {
  for (int64_t c = 0; c < n; ++c) x[c] = exp_approx(x[c] - shift);
}

/** The facts about one call every tile needs, read once. */
struct Attention {
  const kernels::AttentionShape& sh;
  const float* q;
  const float* k;
  const float* v;
  const float* mask;
  float keep_scale;  // 1 / (1 - p), 0 when p = 1 (nothing kept)

  Attention(const kernels::AttentionShape& shape, const Tensor& tq, const Tensor& tk, const Tensor& tv,
            const Tensor& tmask)
      : sh(shape), q(tq.data<float>()), k(tk.data<float>()), v(tv.data<float>()),
        mask(tmask.defined() ? tmask.data<float>() : nullptr),
        keep_scale(shape.dropout_p < 1 ? static_cast<float>(1.0 / (1.0 - shape.dropout_p)) : 0.0f) {}

  /** Offset of row i of batch-head b in an operand laid out as r. */
  int64_t offset(const kernels::RowLayout& r, int64_t b, int64_t i) const {
    return r.base + (b / sh.heads) * r.outer + (b % sh.heads) * r.head + i * r.row;
  }
  const float* q_row(int64_t b, int64_t i) const { return q + offset(sh.q_rows, b, i); }
  const float* k_row(int64_t b, int64_t j) const { return k + offset(sh.k_rows, b, j); }
  const float* v_row(int64_t b, int64_t j) const { return v + offset(sh.v_rows, b, j); }

  /** Keys j < this bound may be attended from query i (the causal mask from the top left). */
  int64_t key_end(int64_t i) const { return sh.causal ? std::min(sh.s, i + 1) : sh.s; }

  /** Query blocks from this one on see key block j0 (all of them without the causal mask). */
  int64_t first_query_block(int64_t j0) const { return sh.causal ? j0 / kBlock : 0; }

  /**
   * The tile's scaled, masked scores: st[r, c] = scale * q_{i0+r} . k_{j0+c} + mask, -inf where
   * the causal mask hides the key. st is nq x nk, row-major.
   */
  void scores(int64_t b, int64_t i0, int64_t nq, int64_t j0, int64_t nk, float* st) const {
    gemm_block(DType::Float32, false, true, nq, nk, sh.e, static_cast<float>(sh.scale), q_row(b, i0), sh.q_rows.row,
               k_row(b, j0), sh.k_rows.row, 0.0f, st, nk);
    for (int64_t r = 0; r < nq; ++r) {
      const int64_t i = i0 + r;
      float* row = st + r * nk;
      if (mask != nullptr) {
        const float* mi = mask + sh.mask_offsets[b] + i * sh.mask_row_stride;
        for (int64_t c = 0; c < nk; ++c) row[c] += mi[(j0 + c) * sh.mask_col_stride];
      }
      for (int64_t c = std::max<int64_t>(0, key_end(i) - j0); c < nk; ++c) row[c] = kNegInf;
    }
  }

  /** Dropout's multiplier of probability (b, i, j): keep_scale when kept, 0 when dropped. */
  float keep(int64_t b, int64_t i, int64_t j) const {
    const uint64_t counter = (static_cast<uint64_t>(b) * sh.l + i) * sh.s + j;
    const uint64_t h = mix64(sh.dropout_seed + (counter + 1) * 0x9e3779b97f4a7c15ULL);
    const double u = static_cast<double>(h >> 40) * 0x1.0p-24;  // uniform in [0, 1) on a 2^-24 grid
    return u >= sh.dropout_p ? keep_scale : 0.0f;
  }

  /** kt[r, c] = keep(b, i0 + r, j0 + c): the tile's dropout multipliers. */
  void keeps(int64_t b, int64_t i0, int64_t nq, int64_t j0, int64_t nk, float* kt) const {
    for (int64_t r = 0; r < nq; ++r) {
      for (int64_t c = 0; c < nk; ++c) kt[r * nk + c] = keep(b, i0 + r, j0 + c);
    }
  }

  bool dropout() const { return sh.dropout_p > 0; }
};

void attention_forward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask,
                       const kernels::AttentionShape& sh, Tensor& out, Tensor& lse) {
  const Attention at(sh, q, k, v, mask);
  float* po = out.data<float>();
  float* pl = lse.data<float>();
  const int64_t q_blocks = (sh.l + kBlock - 1) / kBlock;
  parallel_for(0, sh.bh * q_blocks, 1, [&](int64_t w0, int64_t w1) {
    std::vector<float> m(kBlock), l(kBlock), st(kBlock * kBlock), kt(kBlock * kBlock);
    for (int64_t w = w0; w < w1; ++w) {
      const int64_t b = w / q_blocks, i0 = (w % q_blocks) * kBlock, nq = std::min(sh.l, i0 + kBlock) - i0;
      float* acc = po + at.offset(sh.o_rows, b, i0);  // the output rows accumulate in place
      const int64_t ldo = sh.o_rows.row;
      std::fill(m.begin(), m.end(), kNegInf);
      std::fill(l.begin(), l.end(), 0.0f);
      zero_rows(acc, nq, sh.ev, ldo);
      const int64_t key_stop = sh.causal ? std::min(sh.s, i0 + nq) : sh.s;
      for (int64_t j0 = 0; j0 < key_stop; j0 += kBlock) {
        const int64_t nk = std::min(sh.s, j0 + kBlock) - j0;
        at.scores(b, i0, nq, j0, nk, st.data());
        if (at.dropout()) at.keeps(b, i0, nq, j0, nk, kt.data());
        for (int64_t r = 0; r < nq; ++r) {
          float* p = st.data() + r * nk;
          const float new_m = std::max(m[r], *std::max_element(p, p + nk));
          if (new_m == kNegInf) {  // everything so far masked out
            std::fill(p, p + nk, 0.0f);
            continue;
          }
          if (m[r] != new_m) {
            float alpha = m[r];  // exp(m - new_m); exp(-inf) = 0 on the first block
            exp_shifted(&alpha, 1, new_m);
            l[r] *= alpha;
            float* a = acc + r * ldo;
            for (int64_t c = 0; c < sh.ev; ++c) a[c] *= alpha;
          }
          exp_shifted(p, nk, new_m);
          float sum = 0;
          for (int64_t c = 0; c < nk; ++c) sum += p[c];
          l[r] += sum;  // the softmax's denominator counts every key, kept or dropped
          if (at.dropout()) {
            const float* kr = kt.data() + r * nk;
            for (int64_t c = 0; c < nk; ++c) p[c] *= kr[c];
          }
          m[r] = new_m;
        }
        gemm_block(DType::Float32, false, false, nq, sh.ev, nk, 1.0f, st.data(), nk, at.v_row(b, j0), sh.v_rows.row,
                   1.0f, acc, ldo);
      }
      for (int64_t r = 0; r < nq; ++r) {
        // A row with every key masked attends to nothing: output 0 and no gradient, as PyTorch's
        // scaled_dot_product_attention since 2.5 (a plain softmax would give 0 / 0 = NaN)
        const float inv = l[r] > 0 ? 1.0f / l[r] : 0.0f;
        float* o = acc + r * ldo;
        for (int64_t c = 0; c < sh.ev; ++c) o[c] *= inv;
        pl[b * sh.l + i0 + r] = l[r] > 0 ? m[r] + std::log(l[r]) : kNegInf;
      }
    }
  });
}

/**
 * One tile of the backward: from the scores st (overwritten), P = exp(s - lse) (0 on rows whose
 * every key is masked), Z = P * keep into zt, and dS = P * (dZ * keep - delta) into dst, where
 * dZ = dO_i V_j^T.
 */
struct BackwardTile {
  const Attention& at;
  const float* go;     // dO, laid out as the output
  const float* lse;    // [BH, L]
  const float* delta;  // [BH, L]
  std::vector<float> st, kt, dz;

  BackwardTile(const Attention& a, const float* g, const float* l, const float* d)
      : at(a), go(g), lse(l), delta(d), st(kBlock * kBlock), kt(kBlock * kBlock), dz(kBlock * kBlock) {}

  /** Fills st with Z (the probabilities after dropout) and dz with dS (unscaled). */
  void compute(int64_t b, int64_t i0, int64_t nq, int64_t j0, int64_t nk) {
    const auto& sh = at.sh;
    at.scores(b, i0, nq, j0, nk, st.data());
    gemm_block(DType::Float32, false, true, nq, nk, sh.ev, 1.0f, go + at.offset(sh.o_rows, b, i0), sh.o_rows.row,
               at.v_row(b, j0), sh.v_rows.row, 0.0f, dz.data(), nk);
    if (at.dropout()) at.keeps(b, i0, nq, j0, nk, kt.data());
    for (int64_t r = 0; r < nq; ++r) {
      float* p = st.data() + r * nk;
      float* d = dz.data() + r * nk;
      const float lse_i = lse[b * sh.l + i0 + r];
      if (lse_i == kNegInf) {  // a row with every key masked: no probabilities, no gradient
        std::fill(p, p + nk, 0.0f);
        std::fill(d, d + nk, 0.0f);
        continue;
      }
      exp_shifted(p, nk, lse_i);
      const float delta_i = delta[b * sh.l + i0 + r];
      if (at.dropout()) {
        const float* kr = kt.data() + r * nk;
        for (int64_t c = 0; c < nk; ++c) {
          d[c] = p[c] * (d[c] * kr[c] - delta_i);
          p[c] *= kr[c];
        }
      } else {
        for (int64_t c = 0; c < nk; ++c) d[c] = p[c] * (d[c] - delta_i);
      }
    }
  }
};

void attention_backward(const Tensor& gout, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask,
                        const Tensor& out, const Tensor& lse, const kernels::AttentionShape& sh, Tensor& dq,
                        Tensor& dk, Tensor& dv) {
  const Attention at(sh, q, k, v, mask);
  const float* pg = gout.data<float>();
  const float* po = out.data<float>();
  const float* pl = lse.data<float>();
  const float scale = static_cast<float>(sh.scale);
  // delta[b, i] = dO_i . O_i = sum_j dZ_ij Z_ij: the softmax backward's row term (dropout included).
  std::vector<float> delta(static_cast<size_t>(sh.bh * sh.l));
  float* pd = delta.data();
  parallel_for(0, sh.bh * sh.l, std::max<int64_t>(1, kGrainSize / std::max<int64_t>(sh.ev, 1)),
               [&](int64_t r0, int64_t r1) {
                 for (int64_t r = r0; r < r1; ++r) {
                   const int64_t off = at.offset(sh.o_rows, r / sh.l, r % sh.l);
                   double s = 0;
                   for (int64_t c = 0; c < sh.ev; ++c) s += static_cast<double>(pg[off + c]) * po[off + c];
                   pd[r] = static_cast<float>(s);
                 }
               });
  // dK and dV: one work item per (batch-head, block of keys); query blocks in order.
  // dV_j += Z^T dO_i, dK_j += scale dS^T Q_i.
  const int64_t k_blocks = (sh.s + kBlock - 1) / kBlock;
  const int64_t q_blocks = (sh.l + kBlock - 1) / kBlock;
  float* pdk = dk.data<float>();
  float* pdv = dv.data<float>();
  parallel_for(0, sh.bh * k_blocks, 1, [&](int64_t w0, int64_t w1) {
    BackwardTile tile(at, pg, pl, pd);
    for (int64_t w = w0; w < w1; ++w) {
      const int64_t b = w / k_blocks, j0 = (w % k_blocks) * kBlock, nk = std::min(sh.s, j0 + kBlock) - j0;
      float* dkb = pdk + at.offset(sh.k_rows, b, j0);
      float* dvb = pdv + at.offset(sh.v_rows, b, j0);
      zero_rows(dkb, nk, sh.e, sh.k_rows.row);
      zero_rows(dvb, nk, sh.ev, sh.v_rows.row);
      for (int64_t qb = at.first_query_block(j0); qb < q_blocks; ++qb) {
        const int64_t i0 = qb * kBlock, nq = std::min(sh.l, i0 + kBlock) - i0;
        tile.compute(b, i0, nq, j0, nk);
        gemm_block(DType::Float32, true, false, nk, sh.ev, nq, 1.0f, tile.st.data(), nk, pg + at.offset(sh.o_rows, b, i0),
                   sh.o_rows.row, 1.0f, dvb, sh.v_rows.row);
        gemm_block(DType::Float32, true, false, nk, sh.e, nq, scale, tile.dz.data(), nk, at.q_row(b, i0), sh.q_rows.row,
                   1.0f, dkb, sh.k_rows.row);
      }
    }
  });
  // dQ: one work item per (batch-head, block of queries); key blocks in order. dQ_i += scale dS K_j.
  float* pdq = dq.data<float>();
  parallel_for(0, sh.bh * q_blocks, 1, [&](int64_t w0, int64_t w1) {
    BackwardTile tile(at, pg, pl, pd);
    for (int64_t w = w0; w < w1; ++w) {
      const int64_t b = w / q_blocks, i0 = (w % q_blocks) * kBlock, nq = std::min(sh.l, i0 + kBlock) - i0;
      float* dqb = pdq + at.offset(sh.q_rows, b, i0);
      zero_rows(dqb, nq, sh.e, sh.q_rows.row);
      const int64_t key_stop = sh.causal ? std::min(sh.s, i0 + nq) : sh.s;
      for (int64_t j0 = 0; j0 < key_stop; j0 += kBlock) {
        const int64_t nk = std::min(sh.s, j0 + kBlock) - j0;
        tile.compute(b, i0, nq, j0, nk);
        gemm_block(DType::Float32, false, false, nq, sh.e, nk, scale, tile.dz.data(), nk, at.k_row(b, j0), sh.k_rows.row,
                   1.0f, dqb, sh.q_rows.row);
      }
    }
  });
}

}  // namespace

DDP4J_REGISTER_KERNEL(attention_forward, CPU, attention_forward);
DDP4J_REGISTER_KERNEL(attention_backward, CPU, attention_backward);

}  // namespace ddp4j::cpu
