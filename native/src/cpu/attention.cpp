// CPU scaled dot-product attention, flash-attention's algorithm: the forward walks blocks of keys
// for a block of queries with an online softmax (running max m, running sum l, rescaled
// accumulator), so no L x S matrix exists; it saves the output and each row's logsumexp. The
// backward recomputes the probabilities block by block from the logsumexp: one pass over key
// blocks writes dK and dV (each key's sums run over the queries in order), one over query blocks
// writes dQ. Every output element is computed by one work item in a fixed order, so the bits do
// not depend on the thread count. Causal blocks above the diagonal are skipped. Dropout's keep
// mask is a counter-based hash of (seed, batch-head, i, j): recomputed, never stored.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "ddp4j/dispatch.h"
#include "ddp4j/parallel.h"
#include "ddp4j/transformer_kernels.h"

namespace ddp4j::cpu {
namespace {

constexpr int64_t kQueryBlock = 32;
constexpr int64_t kKeyBlock = 64;
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

/** SplitMix64's finaliser: a well-mixed 64-bit hash of z. */
inline uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/** The facts about one call every loop needs, read once. */
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

  const float* q_row(int64_t b, int64_t i) const { return q + (b * sh.l + i) * sh.e; }
  const float* k_row(int64_t b, int64_t j) const { return k + (b * sh.s + j) * sh.e; }
  const float* v_row(int64_t b, int64_t j) const { return v + (b * sh.s + j) * sh.ev; }

  /** Keys j < this bound may be attended from query i (the causal mask from the top left). */
  int64_t key_end(int64_t i) const { return sh.causal ? std::min(sh.s, i + 1) : sh.s; }

  /** The scaled, masked score of query i against key j. */
  float score(int64_t b, const float* qi, int64_t i, int64_t j) const {
    const float* kj = k_row(b, j);
    float dot = 0;
    for (int64_t c = 0; c < sh.e; ++c) dot += qi[c] * kj[c];
    float s = dot * static_cast<float>(sh.scale);
    if (mask != nullptr) s += mask[sh.mask_offsets[b] + i * sh.mask_row_stride + j * sh.mask_col_stride];
    return s;
  }

  /** Dropout's multiplier of probability (b, i, j): keep_scale when kept, 0 when dropped, 1 without dropout. */
  float keep(int64_t b, int64_t i, int64_t j) const {
    if (sh.dropout_p <= 0) return 1.0f;
    const uint64_t counter = (static_cast<uint64_t>(b) * sh.l + i) * sh.s + j;
    const uint64_t h = mix64(sh.dropout_seed + (counter + 1) * 0x9e3779b97f4a7c15ULL);
    const double u = static_cast<double>(h >> 40) * 0x1.0p-24;  // uniform in [0, 1) on a 2^-24 grid
    return u >= sh.dropout_p ? keep_scale : 0.0f;
  }
};

void attention_forward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask,
                       const kernels::AttentionShape& sh, Tensor& out, Tensor& lse) {
  const Attention at(sh, q, k, v, mask);
  float* po = out.data<float>();
  float* pl = lse.data<float>();
  const int64_t q_blocks = (sh.l + kQueryBlock - 1) / kQueryBlock;
  parallel_for(0, sh.bh * q_blocks, 1, [&](int64_t w0, int64_t w1) {
    std::vector<float> m(kQueryBlock), l(kQueryBlock), acc(kQueryBlock * sh.ev), sc(kKeyBlock);
    for (int64_t w = w0; w < w1; ++w) {
      const int64_t b = w / q_blocks, i0 = (w % q_blocks) * kQueryBlock, i1 = std::min(sh.l, i0 + kQueryBlock);
      std::fill(m.begin(), m.end(), kNegInf);
      std::fill(l.begin(), l.end(), 0.0f);
      std::fill(acc.begin(), acc.end(), 0.0f);
      for (int64_t j0 = 0; j0 < sh.s; j0 += kKeyBlock) {
        if (sh.causal && j0 > i1 - 1) break;  // the block lies above the diagonal for every query here
        const int64_t j1 = std::min(sh.s, j0 + kKeyBlock);
        for (int64_t i = i0; i < i1; ++i) {
          const int64_t jend = std::min(j1, at.key_end(i));
          if (jend <= j0) continue;
          const float* qi = at.q_row(b, i);
          float block_max = kNegInf;
          for (int64_t j = j0; j < jend; ++j) {
            sc[j - j0] = at.score(b, qi, i, j);
            block_max = std::max(block_max, sc[j - j0]);
          }
          const int64_t r = i - i0;
          const float new_m = std::max(m[r], block_max);
          if (new_m == kNegInf) continue;  // everything so far masked out
          const float alpha = std::exp(m[r] - new_m);  // exp(-inf) = 0 on the first block
          float* a = acc.data() + r * sh.ev;
          if (alpha != 1.0f) {
            l[r] *= alpha;
            for (int64_t c = 0; c < sh.ev; ++c) a[c] *= alpha;
          }
          for (int64_t j = j0; j < jend; ++j) {
            const float p = std::exp(sc[j - j0] - new_m);
            l[r] += p;  // the softmax's denominator counts every key, kept or dropped
            const float pz = p * at.keep(b, i, j);
            if (pz == 0.0f) continue;
            const float* vj = at.v_row(b, j);
            for (int64_t c = 0; c < sh.ev; ++c) a[c] += pz * vj[c];
          }
          m[r] = new_m;
        }
      }
      for (int64_t i = i0; i < i1; ++i) {
        const int64_t r = i - i0;
        float* o = po + (b * sh.l + i) * sh.ev;
        // A row with every key masked attends to nothing: output 0 and no gradient, as PyTorch's
        // scaled_dot_product_attention since 2.5 (a plain softmax would give 0 / 0 = NaN)
        const float inv = l[r] > 0 ? 1.0f / l[r] : 0.0f;
        for (int64_t c = 0; c < sh.ev; ++c) o[c] = acc[r * sh.ev + c] * inv;
        pl[b * sh.l + i] = l[r] > 0 ? m[r] + std::log(l[r]) : kNegInf;
      }
    }
  });
}

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
               [=](int64_t r0, int64_t r1) {
                 for (int64_t r = r0; r < r1; ++r) {
                   double s = 0;
                   for (int64_t c = 0; c < sh.ev; ++c) s += static_cast<double>(pg[r * sh.ev + c]) * po[r * sh.ev + c];
                   pd[r] = static_cast<float>(s);
                 }
               });
  const float* go = pg;
  // dS_ij = P_ij (dZ_ij keep_ij - delta_i), dZ_ij = dO_i . V_j, P_ij = exp(s_ij - lse_i).
  auto grad_score = [&](int64_t b, int64_t i, int64_t j, const float* qi, const float* doi, float* z_out) {
    const float lse_i = pl[b * sh.l + i];
    if (lse_i == kNegInf) {  // a row with every key masked: no probabilities, no gradient
      *z_out = 0.0f;
      return 0.0f;
    }
    const float p = std::exp(at.score(b, qi, i, j) - lse_i);
    const float kp = at.keep(b, i, j);
    const float* vj = at.v_row(b, j);
    float dz = 0;
    for (int64_t c = 0; c < sh.ev; ++c) dz += doi[c] * vj[c];
    *z_out = p * kp;
    return p * (dz * kp - pd[b * sh.l + i]);
  };
  // dK and dV: one work item per (batch-head, block of keys); queries in order.
  const int64_t k_blocks = (sh.s + kKeyBlock - 1) / kKeyBlock;
  float* pdk = dk.data<float>();
  float* pdv = dv.data<float>();
  parallel_for(0, sh.bh * k_blocks, 1, [&](int64_t w0, int64_t w1) {
    for (int64_t w = w0; w < w1; ++w) {
      const int64_t b = w / k_blocks, j0 = (w % k_blocks) * kKeyBlock, j1 = std::min(sh.s, j0 + kKeyBlock);
      float* dkb = pdk + (b * sh.s + j0) * sh.e;
      float* dvb = pdv + (b * sh.s + j0) * sh.ev;
      std::fill(dkb, dkb + (j1 - j0) * sh.e, 0.0f);
      std::fill(dvb, dvb + (j1 - j0) * sh.ev, 0.0f);
      for (int64_t i = sh.causal ? j0 : 0; i < sh.l; ++i) {  // causal: query i sees keys j <= i only
        const float* qi = at.q_row(b, i);
        const float* doi = go + (b * sh.l + i) * sh.ev;
        const int64_t jend = std::min(j1, at.key_end(i));
        for (int64_t j = j0; j < jend; ++j) {
          float z;
          const float ds = grad_score(b, i, j, qi, doi, &z) * scale;
          float* dvj = dvb + (j - j0) * sh.ev;
          if (z != 0.0f) {
            for (int64_t c = 0; c < sh.ev; ++c) dvj[c] += z * doi[c];
          }
          float* dkj = dkb + (j - j0) * sh.e;
          for (int64_t c = 0; c < sh.e; ++c) dkj[c] += ds * qi[c];
        }
      }
    }
  });
  // dQ: one work item per (batch-head, block of queries); keys in order.
  const int64_t q_blocks = (sh.l + kQueryBlock - 1) / kQueryBlock;
  float* pdq = dq.data<float>();
  parallel_for(0, sh.bh * q_blocks, 1, [&](int64_t w0, int64_t w1) {
    for (int64_t w = w0; w < w1; ++w) {
      const int64_t b = w / q_blocks, i0 = (w % q_blocks) * kQueryBlock, i1 = std::min(sh.l, i0 + kQueryBlock);
      for (int64_t i = i0; i < i1; ++i) {
        const float* qi = at.q_row(b, i);
        const float* doi = go + (b * sh.l + i) * sh.ev;
        float* dqi = pdq + (b * sh.l + i) * sh.e;
        std::fill(dqi, dqi + sh.e, 0.0f);
        const int64_t jend = at.key_end(i);
        for (int64_t j = 0; j < jend; ++j) {
          float z;
          const float ds = grad_score(b, i, j, qi, doi, &z) * scale;
          const float* kj = at.k_row(b, j);
          for (int64_t c = 0; c < sh.e; ++c) dqi[c] += ds * kj[c];
        }
      }
    }
  });
}

}  // namespace

DDP4J_REGISTER_KERNEL(attention_forward, CPU, attention_forward);
DDP4J_REGISTER_KERNEL(attention_backward, CPU, attention_backward);

}  // namespace ddp4j::cpu
