// kernels.h: the signature of every kernel, one per op. A kernel gets validated inputs and
// preallocated outputs (shapes already checked by ops.h), all on one device, float32 unless said.
// Each device implements these (CPU in src/cpu, CUDA in src/cuda) and registers them with
// DDP4J_REGISTER_KERNEL(name, CPU, fn), where name is the typedef below without "_fn".
#pragma once
#include <cstdint>
#include <vector>

#include "ddp4j/tensor.h"

namespace ddp4j::kernels {

// ---- elementwise and reductions ---------------------------------------------------------------
/** t[:] = value (float32, int64, bfloat16, float16; bool: value != 0). */
using fill_fn = void (*)(Tensor& t, double value);
/** dst[:] = src[:]; same dtype and numel. */
using copy_fn = void (*)(const Tensor& src, Tensor& dst);
/**
 * dst[:] = src[:] between two devices (host <-> GPU, GPU <-> GPU); same dtype and numel. Registered
 * by the GPU device type: looked up on whichever side is not the CPU. A copy to the host returns
 * once the data is there; a copy from the host may return before (the host data is staged first).
 */
using copy_across_fn = void (*)(const Tensor& src, Tensor& dst);
/**
 * dst[:] = src[:] rounded to dst's dtype; src and dst have different dtypes among float32,
 * bfloat16 and float16 and the same numel (torch.Tensor.to(dtype); the bits are half.h's).
 */
using to_dtype_fn = void (*)(const Tensor& src, Tensor& dst);
/** out = a + alpha * b; same numel. out may alias a (in-place accumulate). */
using add_fn = void (*)(const Tensor& a, const Tensor& b, float alpha, Tensor& out);
/** out = a * b elementwise; same numel. */
using mul_fn = void (*)(const Tensor& a, const Tensor& b, Tensor& out);
/** out = a * s; out may alias a. */
using scale_fn = void (*)(const Tensor& a, float s, Tensor& out);
/** out (shape []) = sum of all elements of a (float32, accumulated in double). */
using sum_fn = void (*)(const Tensor& a, Tensor& out);
/** out[n] (int64) = index of the largest x[n, :]; first index on ties. x is [N, C]. */
using argmax_rows_fn = void (*)(const Tensor& x, Tensor& out);

// ---- shape: copies that move elements (src/cpu/shape.cpp; ops_shape.cpp). Any dtype (by element size).
/** out = x with its dimensions reordered: out's dimension i is x's dims[i] (a contiguous copy). torch.permute. */
using permute_fn = void (*)(const Tensor& x, const std::vector<int>& dims, Tensor& out);
/** out = the xs joined along dim (same dtype; equal sizes elsewhere, checked). torch.cat. */
using cat_fn = void (*)(const std::vector<Tensor>& xs, int dim, Tensor& out);
/** out = x's elements [start, start + out.size(dim)) along dim (a copy). torch.narrow(...).contiguous(). */
using narrow_fn = void (*)(const Tensor& x, int dim, int64_t start, Tensor& out);
/** gx (overwritten) = zeros of x's shape with gy copied into elements [start, start + gy.size(dim)) along dim. */
using narrow_backward_fn = void (*)(const Tensor& gy, int dim, int64_t start, Tensor& gx);
/** out = x's slices index[j] (int64, in range) along dim. torch.index_select. */
using index_select_fn = void (*)(const Tensor& x, int dim, const Tensor& index, Tensor& out);
/** gx (float32, overwritten) = zeros, then gy's slices added at index[j] along dim, in j order. */
using index_select_backward_fn = void (*)(const Tensor& gy, int dim, const Tensor& index, Tensor& gx);
/** out[.., j, ..] = x[.., index[.., j, ..], ..] along dim; out has index's shape. torch.gather. */
using gather_fn = void (*)(const Tensor& x, int dim, const Tensor& index, Tensor& out);
/** gx (float32, overwritten) = zeros, then gy scatter-added at index along dim, in index order (deterministic). */
using gather_backward_fn = void (*)(const Tensor& gy, int dim, const Tensor& index, Tensor& gx);
/** out = x with the elements above (tril, upper false) or below (triu) the diagonal-th diagonal of the last two dims zeroed. */
using triangle_fn = void (*)(const Tensor& x, int64_t diagonal, bool upper, Tensor& out);

// ---- broadcast: binary element-wise ops with PyTorch broadcasting (src/cpu/broadcast.cpp) -----------
/** The binary ops; values match org.ddp4j.internal.BroadcastNatives' codes. */
enum class BinaryOp : int32_t { Add = 0, Sub = 1, Mul = 2, Div = 3, Eq = 4, Ne = 5, Lt = 6, Gt = 7, Le = 8, Ge = 9 };
/**
 * out = a op b with a and b broadcast to out's shape. Add..Div: float32 in and out; Eq..Ge: a and
 * b of one dtype (float32, int64 or bool), out bool.
 */
using broadcast_binary_fn = void (*)(const Tensor& a, const Tensor& b, BinaryOp op, Tensor& out);
/** out = condition ? a : b, each broadcast to out's shape; condition bool, a, b and out of one dtype. torch.where. */
using where_fn = void (*)(const Tensor& condition, const Tensor& a, const Tensor& b, Tensor& out);
/** out = mask ? value : x, mask (bool) broadcast to x's shape (out's). torch.Tensor.masked_fill. */
using masked_fill_fn = void (*)(const Tensor& x, const Tensor& mask, double value, Tensor& out);

// ---- unary: element-wise functions of one tensor (src/cpu/unary.cpp) ---------------------------
/** The unary ops; values match org.ddp4j.internal.UnaryNatives' codes. */
enum class UnaryOp : int32_t {
  Exp = 0, Log = 1, Tanh = 2, Pow = 3, Sqrt = 4, Neg = 5, AddScalar = 6, MulScalar = 7, DivScalar = 8, LogicalNot = 9
};
/** out = op(x) (scalar: Pow's exponent, the Scalar ops' operand); float32, LogicalNot bool -> bool. */
using unary_fn = void (*)(const Tensor& x, UnaryOp op, double scalar, Tensor& out);

// ---- reduce: reductions over dimensions and softmax (src/cpu/reduce.cpp) -------------------------
/** out[r] = scale * Σ_c x[r, c] over x's flat data read as [rows, cols], summed in double in c order (float32). */
using sum_rows_fn = void (*)(const Tensor& x, int64_t rows, int64_t cols, double scale, Tensor& out);
/**
 * x read as [outer, size, inner]: values[o, i] = max_j x[o, j, i], indices (int64) = its first j;
 * NaN counts as the largest (the first NaN wins), as torch.max(dim).
 */
using max_dim_fn = void (*)(const Tensor& x, int64_t outer, int64_t size, int64_t inner, Tensor& values,
                            Tensor& indices);
/** y = softmax (or log_softmax, log true) of x read as [outer, size, inner] along the middle, max subtracted. */
using softmax_fn = void (*)(const Tensor& x, int64_t outer, int64_t size, int64_t inner, bool log, Tensor& y);
/** gx = y (gy - Σ gy y) for softmax, gy - exp(y) Σ gy for log_softmax (y the forward's output), same layout. */
using softmax_backward_fn = void (*)(const Tensor& gy, const Tensor& y, int64_t outer, int64_t size, int64_t inner,
                                     bool log, Tensor& gx);

// ---- matmul (src/cpu/matmul.cpp) -----------------------------------------------------------------
/**
 * out[..., m, n] = op(a)[..., m, k] · op(b)[..., k, n], a and b at least 2-D, op(t) the last two
 * dims of t swapped when trans (through the BLAS flags, no copy); the batch dims broadcast to
 * out's. float32. torch.matmul for >= 2-D operands.
 */
using matmul_fn = void (*)(const Tensor& a, const Tensor& b, bool trans_a, bool trans_b, Tensor& out);

// ---- layers -------------------------------------------------------------------------------------
/** y[N, out] = x[N, in] · w[out, in]ᵀ + b[out] (b may be undefined). torch.nn.functional.linear. */
using linear_forward_fn = void (*)(const Tensor& x, const Tensor& w, const Tensor& b, Tensor& y);
/** gx = gy·w, gw = gyᵀ·x, gb = Σ_n gy (gx, gb may be undefined: not needed). Outputs are overwritten. */
using linear_backward_fn = void (*)(const Tensor& gy, const Tensor& x, const Tensor& w, Tensor& gx,
                                    Tensor& gw, Tensor& gb);
// Autocast linear (CPU only: ops_linear.cpp rounds the operands for other devices and calls the
// kernels above): as linear_forward / linear_backward with x, w and gy rounded to compute
// (BFloat16 or Float16; Float32: no rounding) and float32 accumulation. w_in_out: w is [in, out]
// (torch.addmm's mat2, Hugging Face's Conv1D) instead of [out, in], read in place.
using linear_forward_autocast_fn = void (*)(const Tensor& x, const Tensor& w, const Tensor& b, Tensor& y,
                                            DType compute, bool w_in_out);
using linear_backward_autocast_fn = void (*)(const Tensor& gy, const Tensor& x, const Tensor& w, Tensor& gx,
                                             Tensor& gw, Tensor& gb, DType compute, bool w_in_out);
/** out = x rounded to low (BFloat16 or Float16, nearest even) and widened back: float32, same shape; may alias x. */
using round_to_low_precision_fn = void (*)(const Tensor& x, DType low, Tensor& out);
/** found (float32 [1], not reset) = 1 where some element of x (float32) is inf or NaN. torch._amp_foreach_non_finite_check_and_unscale_'s check. */
using non_finite_check_and_unscale_fn = void (*)(const Tensor& x, float inv_scale, Tensor& found);
/** y = max(x, 0). */
using relu_forward_fn = void (*)(const Tensor& x, Tensor& y);
/** gx = gy where y > 0, else 0. */
using relu_backward_fn = void (*)(const Tensor& gy, const Tensor& y, Tensor& gx);

/**
 * Convolution geometry (PyTorch's Conv2d with zero padding). With dilation (dh, dw) kernel tap
 * (r, s) of output (p, q) reads input (p*stride_h - pad_h + r*dh, q*stride_w - pad_w + s*dw);
 * groups G split the C input and K output channels into G independent convolutions of C/G -> K/G
 * channels (the weight is [K, C/G, R, S]; output channel k reads input group k / (K/G)).
 */
struct Conv2dGeometry {
  int stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0;
  int dilation_h = 1, dilation_w = 1, groups = 1;
  /**
   * Autocast (torch.autocast): Float32 multiplies in float32; BFloat16 / Float16 rounds x, w (and
   * gy in the backward) to that dtype and accumulates in float32; tensors stay float32. CPU kernels
   * round while packing their GEMM operands; devices without such kernels get operands the ops layer
   * rounded (round_to_low_precision) and Float32 here.
   */
  DType compute = DType::Float32;
};
/** y[N, K, P, Q] = conv(x[N, C, H, W], w[K, C/G, R, S]) + b[K] (b may be undefined). */
using conv2d_forward_fn = void (*)(const Tensor& x, const Tensor& w, const Tensor& b, Tensor& y,
                                   const Conv2dGeometry& g);
/** Gradients of conv2d_forward; gx and gb may be undefined (not needed). Outputs are overwritten. */
using conv2d_backward_fn = void (*)(const Tensor& gy, const Tensor& x, const Tensor& w, Tensor& gx,
                                    Tensor& gw, Tensor& gb, const Conv2dGeometry& g);

/**
 * Training-mode BatchNorm2d over x[N, C, H, W]: y = (x - mean) * invstd * gamma + beta with batch
 * statistics (biased variance); saves mean[C] and invstd[C]; updates running_mean/running_var
 * (unbiased variance) with running = (1 - momentum) * running + momentum * batch. When affine
 * [2, C] is defined (the CPU's), it receives the scale and shift y was made with (y = x * scale +
 * shift), for batch_norm2d_recompute.
 */
using batch_norm2d_forward_train_fn = void (*)(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                               Tensor& running_mean, Tensor& running_var, double momentum,
                                               double eps, Tensor& y, Tensor& save_mean, Tensor& save_invstd,
                                               Tensor& affine);
/** Eval-mode BatchNorm2d: uses running statistics. */
using batch_norm2d_forward_eval_fn = void (*)(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                              const Tensor& running_mean, const Tensor& running_var,
                                              double eps, Tensor& y);
/** Gradients of training-mode BatchNorm2d (w.r.t. x, gamma, beta). Outputs are overwritten. */
using batch_norm2d_backward_fn = void (*)(const Tensor& gy, const Tensor& x, const Tensor& gamma,
                                          const Tensor& save_mean, const Tensor& save_invstd, Tensor& gx,
                                          Tensor& ggamma, Tensor& gbeta);
/**
 * Training-mode BatchNorm2d fused with the ReLU after it (and, when residual is defined, the
 * residual addition before that ReLU, as at the end of a ResNet block):
 * y = relu(batch_norm(x) + residual), the statistics as batch_norm2d_forward_train. residual, when
 * defined, is float32 of x's shape. Gives the bits of the unfused ops (bn, add, relu). affine
 * [2, C] receives the per-channel scale and shift y was computed with (y = relu(x * scale + shift
 * + residual)), for batch_norm2d_recompute.
 */
using batch_norm2d_relu_forward_train_fn = void (*)(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                                    Tensor& running_mean, Tensor& running_var, double momentum,
                                                    double eps, const Tensor& residual, Tensor& y,
                                                    Tensor& save_mean, Tensor& save_invstd, Tensor& affine);
/**
 * y = x * affine[0][c] + affine[1][c] over x[N, C, H, W], with relu relu(that + residual)
 * (residual undefined for none): the y of batch_norm2d_forward_train or
 * batch_norm2d_relu_forward_train again, bit for bit, from their input and affine output, so the
 * backward can recompute y instead of keeping it.
 */
using batch_norm2d_recompute_fn = void (*)(const Tensor& x, const Tensor& affine, const Tensor& residual, bool relu,
                                           Tensor& y);
/** Eval-mode form of batch_norm2d_relu_forward_train (running statistics; residual may be undefined). */
using batch_norm2d_relu_forward_eval_fn = void (*)(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                                   const Tensor& running_mean, const Tensor& running_var,
                                                   double eps, const Tensor& residual, Tensor& y);
/**
 * Gradients of batch_norm2d_relu_forward_train given its output y: the batch-norm backward of
 * g = (y > 0 ? gy : 0). When gmasked is defined (the residual's gradient is needed) g is written
 * to it. Outputs are overwritten; equal to relu_backward then batch_norm2d_backward. When y is
 * undefined (a forward without residual), the mask comes from x and that forward's affine
 * output instead (y formed again, the same bits), so y need not be kept or recomputed.
 */
using batch_norm2d_relu_backward_fn = void (*)(const Tensor& gy, const Tensor& y, const Tensor& x,
                                               const Tensor& gamma, const Tensor& save_mean,
                                               const Tensor& save_invstd, const Tensor& affine, Tensor& gx,
                                               Tensor& ggamma, Tensor& gbeta, Tensor& gmasked);

// ---- SyncBatchNorm (torch.nn.SyncBatchNorm's batch_norm_stats / gather_stats_with_counts /
// batch_norm_elemt / batch_norm_backward_reduce / batch_norm_backward_elemt); x is [N, C, S...]
// of any rank >= 2, treated as [N, C, S] with S the product of the trailing sizes (1 for [N, C]).
/**
 * One rank's statistics of x for SyncBatchNorm, written to stats[3C + 2] (float32): {count_hi,
 * count_lo, mean_hi[C], mean_lo[C], m2[C]} with count = N * S = count_hi * 2^24 + count_lo (each
 * part exact in float32), mean = mean_hi + mean_lo (a double in two floats) and m2 = Σ (x - mean)²
 * per channel, summed in double as batch_norm2d_forward_train. N may be 0 (all zeros).
 */
using sync_batch_norm_stats_fn = void (*)(const Tensor& x, Tensor& stats);
/**
 * Combines the ranks' rows gathered[W, 3C + 2] (sync_batch_norm_stats of each) in double
 * (Chan's parallel variance): save_mean[C] and save_mean_lo[C] (the group's mean, a double in
 * two floats: mean = save_mean + save_mean_lo), save_invstd[C] = 1 / sqrt(var + eps), var the
 * biased variance over all ranks; when running_mean is defined also running = (1 - momentum) *
 * running + momentum * batch with the unbiased variance for running_var. The total count is > 1
 * (ops.h checks).
 */
using sync_batch_norm_gather_stats_fn = void (*)(const Tensor& gathered, Tensor& running_mean, Tensor& running_var,
                                                 double momentum, double eps, Tensor& save_mean,
                                                 Tensor& save_mean_lo, Tensor& save_invstd);
/**
 * y = ((x - mean) - mean_lo) * (invstd * gamma) + beta per channel (y like x): the mean in two
 * floats, so a mean large against the spread costs no precision. With relu, y = relu(that +
 * residual) (residual, when defined, of x's shape; relu_forward's NaN rule), the bits of the
 * separate ops (the ResNet blocks' batch norm, addition and ReLU).
 */
using sync_batch_norm_elemt_fn = void (*)(const Tensor& x, const Tensor& mean, const Tensor& mean_lo,
                                          const Tensor& invstd, const Tensor& gamma, const Tensor& beta,
                                          const Tensor& residual, bool relu, Tensor& y);
/**
 * This rank's gradient sums: sums[2C] = {Σ gy, Σ gy (x - mean)} per channel, mean = mean +
 * mean_lo (in double, stored float32; what SyncBatchNorm all-reduces), gbeta = Σ gy and
 * ggamma = Σ gy (x - mean) * invstd.
 */
using sync_batch_norm_backward_reduce_fn = void (*)(const Tensor& gy, const Tensor& x, const Tensor& mean,
                                                    const Tensor& mean_lo, const Tensor& invstd, Tensor& sums,
                                                    Tensor& ggamma, Tensor& gbeta);
/**
 * gx = gamma * invstd * (gy - Σgy / count - (x - mean) * invstd² * Σgy(x - mean) / count), mean =
 * mean + mean_lo, the sums (sums[2C], all ranks') and count (> 0, all ranks' N * S) being global.
 */
using sync_batch_norm_backward_elemt_fn = void (*)(const Tensor& gy, const Tensor& x, const Tensor& mean,
                                                   const Tensor& mean_lo, const Tensor& invstd, const Tensor& gamma,
                                                   const Tensor& sums, int64_t count, Tensor& gx);

/**
 * Pooling geometry of torch.nn.MaxPool2d / AvgPool2d. Window (p, q) of the output covers input
 * rows p * stride_h - pad_h + k * dilation_h for k in [0, kernel_h), likewise columns. ceil_mode
 * only changes the output size, which ops.h computes (ops::pool2d_output_size) and the kernel
 * reads from y.
 */
struct Pool2dGeometry {
  int kernel_h = 2, kernel_w = 2, stride_h = 2, stride_w = 2, pad_h = 0, pad_w = 0;
  int dilation_h = 1, dilation_w = 1;
  bool ceil_mode = false;
};
/** y[N, C, P, Q] = max over each window of x; indices (int64, same shape as y) = flat h*W+w of the max. */
using max_pool2d_forward_fn = void (*)(const Tensor& x, Tensor& y, Tensor& indices, const Pool2dGeometry& g);
/** gx = scatter-add of gy into the argmax positions; gx is overwritten. */
using max_pool2d_backward_fn = void (*)(const Tensor& gy, const Tensor& indices, Tensor& gx);
/**
 * y[N, C, P, Q] = mean over each window of x[N, C, H, W] (dilation is 1), as torch.nn.AvgPool2d:
 * the divisor is divisor_override when > 0, else the window's size clipped to the padded input
 * (count_include_pad) or to the input (not count_include_pad). A window lying wholly in the padding
 * gives 0.
 */
using avg_pool2d_forward_fn = void (*)(const Tensor& x, Tensor& y, const Pool2dGeometry& g, bool count_include_pad,
                                       int64_t divisor_override);
/** gx (overwritten) = each gy spread evenly (with the forward's divisor) over its window. */
using avg_pool2d_backward_fn = void (*)(const Tensor& gy, Tensor& gx, const Pool2dGeometry& g,
                                        bool count_include_pad, int64_t divisor_override);
/**
 * y[N, C, P, Q] = mean of x[N, C, H, W] over the windows of torch.nn.AdaptiveAvgPool2d: output row
 * p covers input rows [floor(p H / P), ceil((p + 1) H / P)), likewise columns.
 */
using adaptive_avg_pool2d_forward_fn = void (*)(const Tensor& x, Tensor& y);
/** gx (overwritten) = each gy spread evenly over its adaptive window (windows may overlap: summed). */
using adaptive_avg_pool2d_backward_fn = void (*)(const Tensor& gy, Tensor& gx);

// ---- losses -------------------------------------------------------------------------------------
/** out (shape []) = mean((input - target)²). */
using mse_loss_forward_fn = void (*)(const Tensor& input, const Tensor& target, Tensor& out);
/** ginput = gout * 2 (input - target) / numel; gout has shape []. */
using mse_loss_backward_fn = void (*)(const Tensor& gout, const Tensor& input, const Tensor& target,
                                      Tensor& ginput);
/**
 * out (shape []) = mean over n of -log_softmax(logits[n])[target[n]], computed stably (max
 * subtracted); target is int64 [N] with values in [0, C) (checked: throws InvalidArgument naming
 * the bad value). Saves softmax probabilities [N, C] for the backward.
 */
using cross_entropy_forward_fn = void (*)(const Tensor& logits, const Tensor& target, Tensor& out,
                                          Tensor& probs);
/** glogits = gout * (probs - onehot(target)) / N. */
using cross_entropy_backward_fn = void (*)(const Tensor& gout, const Tensor& probs, const Tensor& target,
                                           Tensor& glogits);

// ---- optimiser ----------------------------------------------------------------------------------
/** Hyper-parameters of torch.optim.SGD. */
struct SgdOptions {
  double lr = 0.01, momentum = 0, dampening = 0, weight_decay = 0;
  bool nesterov = false;
};
/**
 * One SGD update of param in place, exactly as torch.optim.SGD: g = grad + wd * param; with
 * momentum: buf = first ? g : momentum * buf + (1 - dampening) * g; g = nesterov ? g + momentum *
 * buf : buf; param -= lr * g. momentum_buf is undefined when momentum == 0.
 */
using sgd_step_fn = void (*)(Tensor& param, const Tensor& grad, Tensor& momentum_buf, const SgdOptions& o,
                             bool first);

/**
 * Hyper-parameters of torch.optim.Adam and AdamW (decoupled = true: AdamW's weight decay,
 * param *= 1 - lr * weight_decay, instead of Adam's L2 term added to the gradient).
 */
struct AdamOptions {
  double lr = 1e-3, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 0;
  bool amsgrad = false, decoupled = false;
};
/**
 * One Adam / AdamW update of param in place, exactly as torch.optim's _single_tensor_adam(w) of
 * PyTorch 1.13, for step number `step` (1 on the first update; the caller counts):
 * g = grad (+ wd * param for Adam); m = beta1 m + (1 - beta1) g; v = beta2 v + (1 - beta2) g²;
 * with amsgrad vmax = max(vmax, v) replaces v below; denom = sqrt(v) / sqrt(1 - beta2^step) + eps;
 * param -= lr / (1 - beta1^step) * m / denom. max_exp_avg_sq is undefined without amsgrad.
 */
using adam_step_fn = void (*)(Tensor& param, const Tensor& grad, Tensor& exp_avg, Tensor& exp_avg_sq,
                              Tensor& max_exp_avg_sq, const AdamOptions& o, int64_t step);
/** One parameter's tensors for adam_steps_fn; max_exp_avg_sq is null without amsgrad. */
struct AdamTensors {
  Tensor* param;
  const Tensor* grad;
  Tensor* exp_avg;
  Tensor* exp_avg_sq;
  Tensor* max_exp_avg_sq;
  int64_t step;
};
/**
 * adam_step_fn for every parameter of a group in one call (each with its own step number), with the
 * per-parameter call's bits: PyTorch's fused / foreach Adam, without its different rounding.
 */
using adam_steps_fn = void (*)(std::vector<AdamTensors>& group, const AdamOptions& o);

}  // namespace ddp4j::kernels
