// transformer_kernels.h: kernel signatures of the transformer layers (embedding, layer norm, GELU,
// scaled dot-product attention, cross entropy over a large vocabulary), kept apart from kernels.h
// as their own family. Same contract as kernels.h: validated, contiguous inputs, preallocated
// outputs on one device, float32 unless said; registered with DDP4J_REGISTER_KERNEL(name, CPU, fn).
#pragma once
#include <cstdint>

#include "ddp4j/tensor.h"

namespace ddp4j::kernels {

// ---- embedding ----------------------------------------------------------------------------------
/**
 * out[n, :] = weight[index[n], :] for index int64 [N] (any shape flattened), weight [V, D], out
 * [N, D]. Throws InvalidArgument naming the first index outside [0, V) and V.
 */
using embedding_forward_fn = void (*)(const Tensor& index, const Tensor& weight, Tensor& out);
/**
 * gweight [V, D] = sum over n with index[n] = v of gout[n, :], in n order (no gradient to the row
 * padding_idx; padding_idx < 0 means none). gweight is overwritten.
 */
using embedding_backward_fn = void (*)(const Tensor& gout, const Tensor& index, int64_t padding_idx,
                                       Tensor& gweight);

// ---- layer norm ---------------------------------------------------------------------------------
/**
 * Over x [R, D]: y = (x - mean) * rstd * weight + bias per row (weight, bias [D] or undefined),
 * rstd = 1 / sqrt(var + eps) with the biased variance. Saves mean and rstd [R].
 */
using layer_norm_forward_fn = void (*)(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps,
                                       Tensor& y, Tensor& mean, Tensor& rstd);
/** dx [R, D]; dweight, dbias [D] when defined (sums over rows in a thread-count-independent order). */
using layer_norm_backward_fn = void (*)(const Tensor& gy, const Tensor& x, const Tensor& mean, const Tensor& rstd,
                                        const Tensor& weight, Tensor& dx, Tensor& dweight, Tensor& dbias);

// ---- GELU ---------------------------------------------------------------------------------------
/** y = gelu(x); tanh selects the tanh approximation, else the exact erf form. */
using gelu_forward_fn = void (*)(const Tensor& x, bool tanh, Tensor& y);
/** gx = gy * gelu'(x). */
using gelu_backward_fn = void (*)(const Tensor& gy, const Tensor& x, bool tanh, Tensor& gx);

// ---- scaled dot-product attention ---------------------------------------------------------------
/**
 * How one attention call is shaped: q [BH, L, E], k [BH, S, E], v [BH, S, Ev] (the leading dims
 * flattened to BH). mask, when defined, is float32 and additive; element (b, i, j) lies at
 * mask_offsets[b] + i * mask_row_stride + j * mask_col_stride (strides 0 where it broadcasts).
 * Dropout keeps (b, i, j) when a counter-based hash of (dropout_seed, b, i, j) lands at or above
 * dropout_p, scaling kept probabilities by 1 / (1 - dropout_p), so backward recomputes the mask.
 */
/**
 * Where an operand's rows lie: row i of batch-head b starts base + (b / heads) * outer + (b % heads)
 * * head + i * row floats into its tensor. Contiguous [BH, L, E]: heads 1, outer L * E, row E.
 * Packed q | k | v of one [B, T, 3C] projection (attention_packed_*): base 0, C or 2C, outer
 * T * 3C, head D, row 3C.
 */
struct RowLayout {
  int64_t base = 0, outer = 0, head = 0, row = 0;
};

struct AttentionShape {
  int64_t bh = 0, l = 0, s = 0, e = 0, ev = 0;
  // Row layouts of q (and dq), k (dk), v (dv), out (and grad_output); heads: batch-heads per
  // outer index. Contiguous unless the packed op set them (CPU kernels only read them).
  int64_t heads = 1;
  RowLayout q_rows, k_rows, v_rows, o_rows;
  double scale = 1;
  bool causal = false;
  double dropout_p = 0;
  uint64_t dropout_seed = 0;
  const int64_t* mask_offsets = nullptr;  // [BH], host memory; null when there is no mask
  int64_t mask_row_stride = 0, mask_col_stride = 0;
};
/** out [BH, L, Ev] and the rows' logsumexp of the scaled, masked scores lse [BH, L]. */
using attention_forward_fn = void (*)(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask,
                                      const AttentionShape& shape, Tensor& out, Tensor& lse);
/** dq, dk, dv (overwritten) from the forward's inputs, out and lse, recomputing the probabilities. */
using attention_backward_fn = void (*)(const Tensor& gout, const Tensor& q, const Tensor& k, const Tensor& v,
                                       const Tensor& mask, const Tensor& out, const Tensor& lse,
                                       const AttentionShape& shape, Tensor& dq, Tensor& dk, Tensor& dv);

// ---- the vocabulary head fused with its cross entropy (CPU) --------------------------------------
/**
 * loss (shape []) = cross_entropy(h · wᵀ, target, ignore_index) for h [N, C], w [V, C], target [N],
 * the logits made and consumed a block of rows at a time (never [N, V]); with gh / gw defined, also
 * the gradients of that loss (for a grad_output of 1) into gh [N, C] and gw [V, C]. GEMMs multiply
 * in compute (autocast), the softmax in float32.
 */
using linear_cross_entropy_fn = void (*)(const Tensor& h, const Tensor& w, const Tensor& target, int64_t ignore_index,
                                         DType compute, Tensor& loss, Tensor& gh, Tensor& gw);

// ---- cross entropy with logsumexp and ignore_index -----------------------------------------------
/**
 * out (shape []) = mean over n with target[n] != ignore_index of lse[n] - logits[n, target[n]],
 * NaN when every target is ignored; saves lse [N] (the rows' logsumexp). Throws InvalidArgument
 * naming the first target outside [0, C) that is not ignore_index.
 */
using cross_entropy_lse_forward_fn = void (*)(const Tensor& logits, const Tensor& target, int64_t ignore_index,
                                              Tensor& out, Tensor& lse);
/** glogits = gout * (softmax(logits) - onehot(target)) / count, rows of ignored targets 0. */
using cross_entropy_lse_backward_fn = void (*)(const Tensor& gout, const Tensor& logits, const Tensor& lse,
                                               const Tensor& target, int64_t ignore_index, Tensor& glogits);

}  // namespace ddp4j::kernels
