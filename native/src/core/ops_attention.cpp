// Scaled dot-product attention ops: shape checks, the additive mask's broadcasting (as strides and
// per-batch-head offsets, never an expanded copy), output allocation, dispatch.
#include <cmath>

#include "ddp4j/dispatch.h"
#include "ddp4j/ops.h"
#include "ddp4j/transformer_ops.h"

namespace ddp4j::ops {
namespace {

/** The shape facts of one call plus the mask offsets the shape points into. */
struct AttentionCall {
  kernels::AttentionShape shape;
  std::vector<int64_t> mask_offsets;
};

AttentionCall plan_attention(const char* op, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask,
                             bool causal, double scale, double dropout_p, uint64_t seed) {
  check_dtype(op, "query", q, DType::Float32);
  check_dtype(op, "key", k, DType::Float32);
  check_dtype(op, "value", v, DType::Float32);
  check_same_device(op, q, k);
  check_same_device(op, q, v);
  const int n = q.dim();
  DDP4J_CHECK_ARG(n >= 2, op, ": query must be [..., L, E] (at least 2 dims), got ", shape_str(q.shape()));
  const Shape lead(q.shape().begin(), q.shape().end() - 2);
  const auto lead_of = [](const Tensor& t) { return Shape(t.shape().begin(), t.shape().end() - std::min(t.dim(), 2)); };
  DDP4J_CHECK_ARG(k.dim() == n && v.dim() == n && lead_of(k) == lead && lead_of(v) == lead, op, ": query ",
                  shape_str(q.shape()), ", key ", shape_str(k.shape()), " and value ", shape_str(v.shape()),
                  " must be [..., L, E], [..., S, E] and [..., S, Ev] with the same leading dims");
  DDP4J_CHECK_ARG(k.size(-1) == q.size(-1), op, ": key ", shape_str(k.shape()), " must have query's embedding size E = ",
                  q.size(-1), " in its last dim");
  DDP4J_CHECK_ARG(v.size(-2) == k.size(-2), op, ": value ", shape_str(v.shape()), " must have key's length S = ",
                  k.size(-2), " in dim -2");
  DDP4J_CHECK_ARG(dropout_p >= 0 && dropout_p <= 1, op, ": dropout_p must lie in [0, 1], got ", dropout_p);
  AttentionCall call;
  auto& sh = call.shape;
  sh.bh = shape_numel(lead);
  sh.l = q.size(-2);
  sh.s = k.size(-2);
  sh.e = q.size(-1);
  sh.ev = v.size(-1);
  sh.scale = scale > 0 ? scale : 1.0 / std::sqrt(static_cast<double>(sh.e));
  sh.causal = causal;
  sh.dropout_p = dropout_p;
  sh.dropout_seed = seed;
  sh.q_rows = {0, sh.l * sh.e, 0, sh.e};
  sh.k_rows = {0, sh.s * sh.e, 0, sh.e};
  sh.v_rows = {0, sh.s * sh.ev, 0, sh.ev};
  sh.o_rows = {0, sh.l * sh.ev, 0, sh.ev};
  if (!mask.defined()) return call;
  check_dtype(op, "attn_mask", mask, DType::Float32);
  check_same_device(op, q, mask);
  Shape target = lead;
  target.push_back(sh.l);
  target.push_back(sh.s);
  const int md = mask.dim(), td = static_cast<int>(target.size());
  bool ok = md <= td;
  for (int d = 0; ok && d < md; ++d) {
    const int64_t m = mask.shape()[d], t = target[td - md + d];
    ok = m == 1 || m == t;
  }
  DDP4J_CHECK_ARG(ok, op, ": attn_mask ", shape_str(mask.shape()), " does not broadcast to the scores' shape ",
                  shape_str(target), " ([..., L, S])");
  // Effective strides of the mask seen as target-shaped: 0 where it broadcasts.
  std::vector<int64_t> stride(td, 0);
  int64_t running = 1;
  for (int d = md - 1; d >= 0; --d) {
    const int64_t m = mask.shape()[d];
    stride[td - md + d] = m == 1 ? 0 : running;
    running *= m;
  }
  sh.mask_row_stride = stride[td - 2];
  sh.mask_col_stride = stride[td - 1];
  call.mask_offsets.resize(static_cast<size_t>(sh.bh));
  for (int64_t b = 0; b < sh.bh; ++b) {
    int64_t rest = b, off = 0;
    for (int d = td - 3; d >= 0; --d) {
      off += (rest % target[d]) * stride[d];
      rest /= target[d];
    }
    call.mask_offsets[b] = off;
  }
  sh.mask_offsets = call.mask_offsets.data();
  return call;
}

/** The shape of a packed call: qkv [B, T, 3C] read in place, heads of D = C / heads, no mask. */
kernels::AttentionShape plan_packed(const char* op, const Tensor& qkv, int64_t heads, bool causal, double scale,
                                    double dropout_p, uint64_t seed) {
  check_dtype(op, "qkv", qkv, DType::Float32);
  DDP4J_CHECK_ARG(qkv.dim() == 3 && qkv.size(2) % 3 == 0, op, ": qkv must be [B, T, 3 * C] (q, k and v side by side "
                  "in the last dim), got ", shape_str(qkv.shape()));
  const int64_t b = qkv.size(0), t = qkv.size(1), c = qkv.size(2) / 3;
  DDP4J_CHECK_ARG(heads >= 1 && c % heads == 0, op, ": the width C = ", c, " must split into ", heads,
                  " heads (heads >= 1 dividing C)");
  DDP4J_CHECK_ARG(dropout_p >= 0 && dropout_p <= 1, op, ": dropout_p must lie in [0, 1], got ", dropout_p);
  const int64_t d = c / heads;
  kernels::AttentionShape sh;
  sh.bh = b * heads;
  sh.l = sh.s = t;
  sh.e = sh.ev = d;
  sh.scale = scale > 0 ? scale : 1.0 / std::sqrt(static_cast<double>(d));
  sh.causal = causal;
  sh.dropout_p = dropout_p;
  sh.dropout_seed = seed;
  sh.heads = heads;
  sh.q_rows = {0, t * 3 * c, d, 3 * c};
  sh.k_rows = {c, t * 3 * c, d, 3 * c};
  sh.v_rows = {2 * c, t * 3 * c, d, 3 * c};
  sh.o_rows = {0, t * c, d, c};
  return sh;
}

/** [B, T, C] -> [B, H, T, C / H], copied (the packed ops' path on devices whose kernels read contiguous operands). */
Tensor split_heads(const Tensor& x, int64_t heads) {
  return transpose(x.view({x.size(0), x.size(1), heads, x.size(2) / heads}), 1, 2);
}

/** [B, H, T, D] -> [B, T, H * D], copied. */
Tensor merge_heads(const Tensor& x) {
  return transpose(x, 1, 2).view({x.size(0), x.size(2), x.size(1) * x.size(3)});
}

Shape with_last(const Shape& s, int64_t last) {
  Shape r = s;
  r.back() = last;
  return r;
}

}  // namespace

std::vector<Tensor> attention_forward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask,
                                      bool causal, double scale, double dropout_p, uint64_t dropout_seed) {
  AttentionCall call = plan_attention("scaled_dot_product_attention", q, k, v, mask, causal, scale, dropout_p,
                                      dropout_seed);
  Tensor out = Tensor::empty(with_last(q.shape(), call.shape.ev), DType::Float32, q.device());
  Shape lse_shape(q.shape().begin(), q.shape().end() - 1);
  Tensor lse = Tensor::empty(lse_shape, DType::Float32, q.device());
  static KernelSlot slot("attention_forward");
  slot.get<kernels::attention_forward_fn>(q.device())(q, k, v, mask, call.shape, out, lse);
  return {out, lse};
}

std::vector<Tensor> attention_backward(const Tensor& gout, const Tensor& q, const Tensor& k, const Tensor& v,
                                       const Tensor& mask, const Tensor& out, const Tensor& lse, bool causal,
                                       double scale, double dropout_p, uint64_t dropout_seed) {
  const char* op = "scaled_dot_product_attention_backward";
  AttentionCall call = plan_attention(op, q, k, v, mask, causal, scale, dropout_p, dropout_seed);
  const Shape out_shape = with_last(q.shape(), call.shape.ev);
  check_dtype(op, "grad_output", gout, DType::Float32);
  DDP4J_CHECK_ARG(gout.shape() == out_shape && out.shape() == out_shape, op, ": grad_output ",
                  shape_str(gout.shape()), " and output ", shape_str(out.shape()), " must be ", shape_str(out_shape));
  DDP4J_CHECK_ARG(lse.numel() == call.shape.bh * call.shape.l, op, ": lse ", shape_str(lse.shape()),
                  " must hold one value per query row");
  check_dtype(op, "output", out, DType::Float32);
  check_dtype(op, "lse", lse, DType::Float32);
  check_same_device(op, q, gout);
  check_same_device(op, q, out);
  check_same_device(op, q, lse);
  Tensor dq = Tensor::empty(q.shape(), DType::Float32, q.device());
  Tensor dk = Tensor::empty(k.shape(), DType::Float32, q.device());
  Tensor dv = Tensor::empty(v.shape(), DType::Float32, q.device());
  static KernelSlot slot("attention_backward");
  slot.get<kernels::attention_backward_fn>(q.device())(gout, q, k, v, mask, out, lse, call.shape, dq, dk, dv);
  return {dq, dk, dv};
}

std::vector<Tensor> attention_packed_forward(const Tensor& qkv, int64_t heads, bool causal, double scale,
                                             double dropout_p, uint64_t dropout_seed) {
  const char* op = "attention_packed";
  const kernels::AttentionShape sh = plan_packed(op, qkv, heads, causal, scale, dropout_p, dropout_seed);
  const int64_t b = qkv.size(0), t = qkv.size(1), c = qkv.size(2) / 3;
  if (qkv.device().type != DeviceType::CPU) {  // the device's kernel reads contiguous heads: split, attend, merge
    const Tensor q = split_heads(narrow(qkv, 2, 0, c), heads), k = split_heads(narrow(qkv, 2, c, c), heads),
                 v = split_heads(narrow(qkv, 2, 2 * c, c), heads);
    std::vector<Tensor> r = attention_forward(q, k, v, Tensor(), causal, sh.scale, dropout_p, dropout_seed);
    return {merge_heads(r[0]), r[1]};
  }
  Tensor out = Tensor::empty({b, t, c}, DType::Float32, qkv.device());
  Tensor lse = Tensor::empty({b, heads, t}, DType::Float32, qkv.device());
  static KernelSlot slot("attention_forward");
  slot.get<kernels::attention_forward_fn>(qkv.device())(qkv, qkv, qkv, Tensor(), sh, out, lse);
  return {out, lse};
}

Tensor attention_packed_backward(const Tensor& gout, const Tensor& qkv, const Tensor& out, const Tensor& lse,
                                 int64_t heads, bool causal, double scale, double dropout_p, uint64_t dropout_seed) {
  const char* op = "attention_packed_backward";
  const kernels::AttentionShape sh = plan_packed(op, qkv, heads, causal, scale, dropout_p, dropout_seed);
  const int64_t b = qkv.size(0), t = qkv.size(1), c = qkv.size(2) / 3;
  const Shape out_shape{b, t, c};
  check_dtype(op, "grad_output", gout, DType::Float32);
  check_dtype(op, "output", out, DType::Float32);
  check_dtype(op, "lse", lse, DType::Float32);
  DDP4J_CHECK_ARG(gout.shape() == out_shape && out.shape() == out_shape, op, ": grad_output ", shape_str(gout.shape()),
                  " and output ", shape_str(out.shape()), " must be ", shape_str(out_shape));
  DDP4J_CHECK_ARG(lse.numel() == b * heads * t, op, ": lse ", shape_str(lse.shape()), " must hold one value per query row");
  check_same_device(op, qkv, gout);
  check_same_device(op, qkv, out);
  check_same_device(op, qkv, lse);
  if (qkv.device().type != DeviceType::CPU) {
    const Tensor q = split_heads(narrow(qkv, 2, 0, c), heads), k = split_heads(narrow(qkv, 2, c, c), heads),
                 v = split_heads(narrow(qkv, 2, 2 * c, c), heads);
    std::vector<Tensor> g = attention_backward(split_heads(gout, heads), q, k, v, Tensor(), split_heads(out, heads),
                                               lse.view({b, heads, t}), causal, sh.scale, dropout_p, dropout_seed);
    return cat({merge_heads(g[0]), merge_heads(g[1]), merge_heads(g[2])}, 2);
  }
  Tensor dqkv = Tensor::empty(qkv.shape(), DType::Float32, qkv.device());
  static KernelSlot slot("attention_backward");
  slot.get<kernels::attention_backward_fn>(qkv.device())(gout, qkv, qkv, qkv, Tensor(), out, lse, sh, dqkv, dqkv, dqkv);
  return dqkv;
}

}  // namespace ddp4j::ops
