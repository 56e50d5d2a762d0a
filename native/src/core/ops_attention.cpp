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

}  // namespace ddp4j::ops
