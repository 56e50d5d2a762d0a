// transformer_ops.h: the transformer layers' ops (src/core/ops_transformer.cpp, JNI family
// TransformerNatives; attention in src/core/ops_attention.cpp, AttentionNatives). As ops.h: each
// checks dtypes, devices and shapes (InvalidArgument naming them), allocates outputs on the
// inputs' device and calls the registered kernel (transformer_kernels.h).
#pragma once
#include <vector>

#include "ddp4j/tensor.h"
#include "ddp4j/transformer_kernels.h"

namespace ddp4j::ops {

/** torch.nn.functional.embedding: index int64 [*], weight float32 [V, D] -> [*, D]. */
Tensor embedding_forward(const Tensor& index, const Tensor& weight);
/** The dense weight gradient [V, D] (padding_idx < 0: none). */
Tensor embedding_backward(const Tensor& gout, const Tensor& index, int64_t num_embeddings, int64_t padding_idx);

/**
 * torch.nn.functional.layer_norm over the trailing `normalized_dims` dims of x; weight and bias
 * (of those dims' shape) may be undefined. Returns {y, mean, rstd}.
 */
std::vector<Tensor> layer_norm_forward(const Tensor& x, int normalized_dims, const Tensor& weight, const Tensor& bias,
                                       double eps);
/** Returns {dx, dweight, dbias} (the latter two undefined without weight / bias). */
std::vector<Tensor> layer_norm_backward(const Tensor& gy, const Tensor& x, int normalized_dims, const Tensor& mean,
                                        const Tensor& rstd, const Tensor& weight, bool has_bias);

/** torch.nn.functional.gelu(x, approximate='tanh' if tanh else 'none'). */
Tensor gelu_forward(const Tensor& x, bool tanh);
Tensor gelu_backward(const Tensor& gy, const Tensor& x, bool tanh);

/**
 * torch.nn.functional.scaled_dot_product_attention (fused, no L x S buffer): q [..., L, E],
 * k [..., S, E], v [..., S, Ev] with equal leading dims; mask undefined or float32 broadcastable to
 * [..., L, S]; scale <= 0 means 1 / sqrt(E). Returns {out [..., L, Ev], lse [..., L]}.
 */
std::vector<Tensor> attention_forward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask,
                                      bool causal, double scale, double dropout_p, uint64_t dropout_seed);
/** Returns {dq, dk, dv}; the arguments as the forward's plus its out and lse. */
std::vector<Tensor> attention_backward(const Tensor& gout, const Tensor& q, const Tensor& k, const Tensor& v,
                                       const Tensor& mask, const Tensor& out, const Tensor& lse, bool causal,
                                       double scale, double dropout_p, uint64_t dropout_seed);
/**
 * Multi-head attention on one projection's packed output, read in place: qkv [B, T, 3C] holds q, k
 * and v side by side in its last dim, each split into `heads` heads of C / heads; returns
 * {out [B, T, C] (heads merged), lse [B, heads, T]}. The same as scaled_dot_product_attention on
 * qkv.split(C, 2) viewed as [B, T, heads, D] and transposed to [B, heads, T, D], with the output
 * transposed back, without the five copies. scale <= 0: 1 / sqrt(D).
 */
std::vector<Tensor> attention_packed_forward(const Tensor& qkv, int64_t heads, bool causal, double scale,
                                             double dropout_p, uint64_t dropout_seed);
/** dqkv [B, T, 3C] of attention_packed_forward. */
Tensor attention_packed_backward(const Tensor& gout, const Tensor& qkv, const Tensor& out, const Tensor& lse,
                                 int64_t heads, bool causal, double scale, double dropout_p, uint64_t dropout_seed);

/**
 * cross_entropy(h · wᵀ, target, ignore_index) for h [N, C], w [V, C] (a language model's head and
 * its loss) without the [N, V] logits: returns {loss [], gh [N, C], gw [V, C]}, the gradients (for a
 * grad_output of 1) made in the same pass when need_gh / need_gw (else undefined). GEMMs in compute
 * (autocast: BFloat16 / Float16, Float32). Throws InvalidArgument naming the shapes or a target
 * outside [0, V) that is not ignore_index.
 */
std::vector<Tensor> linear_cross_entropy(const Tensor& h, const Tensor& w, const Tensor& target, int64_t ignore_index,
                                         bool need_gh, bool need_gw, DType compute);

/** Mean cross entropy over targets != ignore_index, logits [N, C]; returns {loss [], lse [N]}. */
std::vector<Tensor> cross_entropy_lse_forward(const Tensor& logits, const Tensor& target, int64_t ignore_index);
/** glogits [N, C]. */
Tensor cross_entropy_lse_backward(const Tensor& gout, const Tensor& logits, const Tensor& lse, const Tensor& target,
                                  int64_t ignore_index);

}  // namespace ddp4j::ops
