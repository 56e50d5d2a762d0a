// Transformer layer ops (embedding, layer norm, GELU, cross entropy with logsumexp and
// ignore_index): argument checks, output allocation, dispatch. Index and target values live on
// the tensor's device, so the kernels check their range.
#include "ddp4j/dispatch.h"
#include "ddp4j/ops.h"
#include "ddp4j/transformer_ops.h"

namespace ddp4j::ops {
namespace {

/** Product of the sizes of the first `dims` dims of s. */
int64_t prefix_numel(const Shape& s, size_t dims) {
  int64_t n = 1;
  for (size_t d = 0; d < dims; ++d) n *= s[d];
  return n;
}

/** The trailing `normalized_dims` sizes of x: layer norm's normalized_shape. */
Shape trailing(const Tensor& x, int normalized_dims) {
  return Shape(x.shape().end() - normalized_dims, x.shape().end());
}

void check_layer_norm_args(const char* op, const Tensor& x, int normalized_dims, const Tensor& weight,
                           const Tensor& bias) {
  check_dtype(op, "input", x, DType::Float32);
  DDP4J_CHECK_ARG(normalized_dims >= 1 && normalized_dims <= x.dim(), op, ": normalized_shape must name 1 to ",
                  x.dim(), " trailing dims of input ", shape_str(x.shape()), ", got ", normalized_dims, " dims");
  const Shape norm = trailing(x, normalized_dims);
  for (const Tensor* p : {&weight, &bias}) {
    if (!p->defined()) continue;
    const char* what = p == &weight ? "weight" : "bias";
    check_dtype(op, what, *p, DType::Float32);
    check_same_device(op, x, *p);
    DDP4J_CHECK_ARG(p->shape() == norm, op, ": ", what, " ", shape_str(p->shape()),
                    " must have normalized_shape ", shape_str(norm), " (the trailing dims of input ",
                    shape_str(x.shape()), ")");
  }
}

}  // namespace

Tensor embedding_forward(const Tensor& index, const Tensor& weight) {
  DDP4J_CHECK_ARG(index.dtype() == DType::Int64, "embedding: input must be int64 indices, got ", index.describe());
  check_dtype("embedding", "weight", weight, DType::Float32);
  check_dim("embedding", "weight", weight, 2);
  check_same_device("embedding", index, weight);
  Shape shape = index.shape();
  shape.push_back(weight.size(1));
  Tensor out = Tensor::empty(shape, DType::Float32, weight.device());
  static KernelSlot slot("embedding_forward");
  slot.get<kernels::embedding_forward_fn>(weight.device())(index, weight, out);
  return out;
}

Tensor embedding_backward(const Tensor& gout, const Tensor& index, int64_t num_embeddings, int64_t padding_idx) {
  DDP4J_CHECK_ARG(index.dtype() == DType::Int64, "embedding_backward: input must be int64 indices, got ",
                  index.describe());
  check_dtype("embedding_backward", "grad_output", gout, DType::Float32);
  check_same_device("embedding_backward", gout, index);
  DDP4J_CHECK_ARG(gout.dim() == index.dim() + 1 && prefix_numel(gout.shape(), index.dim()) == index.numel(),
                  "embedding_backward: grad_output ", shape_str(gout.shape()), " does not match input ",
                  shape_str(index.shape()), " (expected [*input.shape, embedding_dim])");
  Tensor gweight = Tensor::empty({num_embeddings, gout.size(-1)}, DType::Float32, gout.device());
  static KernelSlot slot("embedding_backward");
  slot.get<kernels::embedding_backward_fn>(gout.device())(gout, index, padding_idx, gweight);
  return gweight;
}

std::vector<Tensor> layer_norm_forward(const Tensor& x, int normalized_dims, const Tensor& weight, const Tensor& bias,
                                       double eps) {
  check_layer_norm_args("layer_norm", x, normalized_dims, weight, bias);
  const int64_t rows = prefix_numel(x.shape(), x.dim() - normalized_dims);
  const int64_t d = shape_numel(trailing(x, normalized_dims));
  Tensor y = Tensor::empty(x.shape(), DType::Float32, x.device());
  Tensor mean = Tensor::empty({rows}, DType::Float32, x.device());
  Tensor rstd = Tensor::empty({rows}, DType::Float32, x.device());
  static KernelSlot slot("layer_norm_forward");
  Tensor y2 = y.view({rows, d});
  slot.get<kernels::layer_norm_forward_fn>(x.device())(x.view({rows, d}), weight.defined() ? weight.view({d}) : weight,
                                                       bias.defined() ? bias.view({d}) : bias, eps, y2, mean, rstd);
  return {y, mean, rstd};
}

std::vector<Tensor> layer_norm_backward(const Tensor& gy, const Tensor& x, int normalized_dims, const Tensor& mean,
                                        const Tensor& rstd, const Tensor& weight, bool has_bias) {
  check_layer_norm_args("layer_norm_backward", x, normalized_dims, weight, Tensor());
  check_dtype("layer_norm_backward", "grad_output", gy, DType::Float32);
  check_same_shape("layer_norm_backward", gy, x);
  const int64_t rows = prefix_numel(x.shape(), x.dim() - normalized_dims);
  const Shape norm = trailing(x, normalized_dims);
  const int64_t d = shape_numel(norm);
  DDP4J_CHECK_ARG(mean.numel() == rows && rstd.numel() == rows, "layer_norm_backward: mean ",
                  shape_str(mean.shape()), " and rstd ", shape_str(rstd.shape()), " must hold ", rows, " rows");
  check_dtype("layer_norm_backward", "mean", mean, DType::Float32);
  check_dtype("layer_norm_backward", "rstd", rstd, DType::Float32);
  check_same_device("layer_norm_backward", x, gy);
  check_same_device("layer_norm_backward", x, mean);
  check_same_device("layer_norm_backward", x, rstd);
  Tensor dx = Tensor::empty(x.shape(), DType::Float32, x.device());
  Tensor dweight = weight.defined() ? Tensor::empty(norm, DType::Float32, x.device()) : Tensor();
  Tensor dbias = has_bias ? Tensor::empty(norm, DType::Float32, x.device()) : Tensor();
  Tensor dx2 = dx.view({rows, d});
  Tensor dw2 = dweight.defined() ? dweight.view({d}) : Tensor();
  Tensor db2 = dbias.defined() ? dbias.view({d}) : Tensor();
  static KernelSlot slot("layer_norm_backward");
  slot.get<kernels::layer_norm_backward_fn>(x.device())(gy.view({rows, d}), x.view({rows, d}), mean, rstd,
                                                        weight.defined() ? weight.view({d}) : weight, dx2, dw2, db2);
  return {dx, dweight, dbias};
}

Tensor gelu_forward(const Tensor& x, bool tanh) {
  check_dtype("gelu", "input", x, DType::Float32);
  Tensor y = Tensor::empty(x.shape(), DType::Float32, x.device());
  static KernelSlot slot("gelu_forward");
  slot.get<kernels::gelu_forward_fn>(x.device())(x, tanh, y);
  return y;
}

Tensor gelu_backward(const Tensor& gy, const Tensor& x, bool tanh) {
  check_dtype("gelu_backward", "grad_output", gy, DType::Float32);
  check_dtype("gelu_backward", "input", x, DType::Float32);
  check_same_device("gelu_backward", gy, x);
  check_same_shape("gelu_backward", gy, x);
  Tensor gx = Tensor::empty(x.shape(), DType::Float32, x.device());
  static KernelSlot slot("gelu_backward");
  slot.get<kernels::gelu_backward_fn>(x.device())(gy, x, tanh, gx);
  return gx;
}

namespace {
void check_cross_entropy_lse_args(const char* op, const Tensor& logits, const Tensor& target) {
  check_dtype(op, "input", logits, DType::Float32);
  DDP4J_CHECK_ARG(logits.dim() == 2, op, ": input must be [N, C] (2 dimensions), got shape ",
                  shape_str(logits.shape()));
  DDP4J_CHECK_ARG(logits.size(1) > 0, op, ": input ", shape_str(logits.shape()), " has no classes");
  DDP4J_CHECK_ARG(target.dtype() == DType::Int64, op, ": target must be int64 class indices, got ",
                  target.describe());
  DDP4J_CHECK_ARG(target.dim() == 1 && target.size(0) == logits.size(0), op, ": input ", shape_str(logits.shape()),
                  " has ", logits.size(0), " rows but target ", shape_str(target.shape()), " must be [",
                  logits.size(0), "]");
  check_same_device(op, logits, target);
}
}  // namespace

std::vector<Tensor> cross_entropy_lse_forward(const Tensor& logits, const Tensor& target, int64_t ignore_index) {
  check_cross_entropy_lse_args("cross_entropy", logits, target);
  Tensor out = Tensor::empty({}, DType::Float32, logits.device());
  Tensor lse = Tensor::empty({logits.size(0)}, DType::Float32, logits.device());
  static KernelSlot slot("cross_entropy_lse_forward");
  slot.get<kernels::cross_entropy_lse_forward_fn>(logits.device())(logits, target, ignore_index, out, lse);
  return {out, lse};
}

Tensor cross_entropy_lse_backward(const Tensor& gout, const Tensor& logits, const Tensor& lse, const Tensor& target,
                                  int64_t ignore_index) {
  check_cross_entropy_lse_args("cross_entropy_backward", logits, target);
  check_dtype("cross_entropy_backward", "grad_output", gout, DType::Float32);
  DDP4J_CHECK_ARG(gout.numel() == 1, "cross_entropy_backward: grad_output of a mean loss must have one element, got ",
                  shape_str(gout.shape()));
  DDP4J_CHECK_ARG(lse.numel() == logits.size(0), "cross_entropy_backward: lse ", shape_str(lse.shape()),
                  " must hold one value per row of ", shape_str(logits.shape()));
  Tensor glogits = Tensor::empty(logits.shape(), DType::Float32, logits.device());
  static KernelSlot slot("cross_entropy_lse_backward");
  slot.get<kernels::cross_entropy_lse_backward_fn>(logits.device())(gout, logits, lse, target, ignore_index, glogits);
  return glogits;
}

std::vector<Tensor> linear_cross_entropy(const Tensor& h, const Tensor& w, const Tensor& target, int64_t ignore_index,
                                         bool need_gh, bool need_gw, DType compute) {
  const char* op = "linear_cross_entropy";
  check_dtype(op, "input", h, DType::Float32);
  check_dtype(op, "weight", w, DType::Float32);
  DDP4J_CHECK_ARG(h.dim() == 2 && w.dim() == 2 && h.size(1) == w.size(1), op, ": input ", shape_str(h.shape()),
                  " and weight ", shape_str(w.shape()), " must be [N, C] and [V, C]");
  DDP4J_CHECK_ARG(w.size(0) > 0, op, ": weight ", shape_str(w.shape()), " has no classes");
  DDP4J_CHECK_ARG(target.dtype() == DType::Int64, op, ": target must be int64 class indices, got ", target.describe());
  DDP4J_CHECK_ARG(target.dim() == 1 && target.size(0) == h.size(0), op, ": input ", shape_str(h.shape()), " has ",
                  h.size(0), " rows but target ", shape_str(target.shape()), " must be [", h.size(0), "]");
  check_same_device(op, h, w);
  check_same_device(op, h, target);
  check_autocast_dtype(op, compute);
  if (h.device().type != DeviceType::CPU) {  // the unfused ops: logits, loss, their gradients
    const Tensor logits = linear_forward(h, w, Tensor(), compute);
    std::vector<Tensor> l = cross_entropy_lse_forward(logits, target, ignore_index);
    if (!need_gh && !need_gw) return {l[0], Tensor(), Tensor()};
    Tensor one = Tensor::empty({}, DType::Float32, h.device());
    fill_(one, 1.0);
    const Tensor g = cross_entropy_lse_backward(one, logits, l[1], target, ignore_index);
    std::vector<Tensor> lb = linear_backward(g, h, w, need_gh, false, compute);
    return {l[0], lb[0], need_gw ? lb[1] : Tensor()};
  }
  Tensor loss = Tensor::empty({}, DType::Float32, h.device());
  Tensor gh = need_gh ? Tensor::empty(h.shape(), DType::Float32, h.device()) : Tensor();
  Tensor gw = need_gw ? Tensor::empty(w.shape(), DType::Float32, w.device()) : Tensor();
  static KernelSlot slot("linear_cross_entropy");
  slot.get<kernels::linear_cross_entropy_fn>(h.device())(h, w, target, ignore_index, compute, loss, gh, gw);
  return {loss, gh, gw};
}

}  // namespace ddp4j::ops
