// ops.h: the device-independent ops the JNI layer calls. Each checks dtypes, devices and shapes
// (throwing InvalidArgument with both shapes in the message), allocates outputs on the inputs'
// device, and calls the registered kernel (kernels.h). An undefined Tensor means "absent".
#pragma once
#include <vector>

#include "ddp4j/kernels.h"
#include "ddp4j/tensor.h"

namespace ddp4j::ops {

// ---- tensors: fill, copies, flatten (src/core/ops_tensor.cpp; TensorNatives) -----------------
/** Sets every element to value (torch.Tensor.fill_). */
void fill_(Tensor& t, double value);
/**
 * Copies src into dst (same numel), also between devices (torch.Tensor.copy_). Between float32,
 * bfloat16 and float16 it converts as to_dtype does (CPU tensors only so far); other dtype pairs
 * throw InvalidArgument naming both tensors.
 */
void copy_(const Tensor& src, Tensor& dst);
/**
 * src on `target`: src itself when it is already there, else a copy (same shape and dtype).
 * Mirrors torch.Tensor.to(device). Throws IllegalState when target is a GPU and libddp4j_cuda is
 * not loaded, and whatever the GPU side throws (no device, out of memory).
 */
Tensor to_device(const Tensor& src, Device target);
/**
 * src converted to dtype: src itself when it already has it, else a new tensor of src's shape on
 * src's device. Mirrors torch.Tensor.to(dtype) between float32, bfloat16 and float16 (any pair):
 * round to nearest even, subnormals kept, overflow to inf, NaN as half.h says. CPU tensors only
 * so far. Throws InvalidArgument naming the op, the dtypes and the fix for int64 on either side
 * and for a GPU tensor.
 */
Tensor to_dtype(const Tensor& src, DType dtype);
/**
 * Copies sources, in order, into consecutive elements of flat, as torch's
 * _flatten_dense_tensors does into a new buffer; each copy runs on flat's device. Every tensor must
 * have flat's dtype and device, and their element counts must add up to flat's.
 */
void flatten_into(const std::vector<Tensor>& sources, Tensor& flat);
/** The inverse (torch's _unflatten_dense_tensors + copy_): destinations receive consecutive slices of flat. */
void unflatten_from(const Tensor& flat, std::vector<Tensor>& destinations);
// ---- elementwise and reductions (src/core/ops_elementwise.cpp; ElementwiseNatives) -----------
/** a + alpha * b (same shape). torch.add. */
Tensor add(const Tensor& a, const Tensor& b, float alpha);
/** a += alpha * b in place (same numel). torch.Tensor.add_. */
void add_(Tensor& a, const Tensor& b, float alpha);
/** a * b (same shape). torch.mul. */
Tensor mul(const Tensor& a, const Tensor& b);
/** a * s. */
Tensor scale(const Tensor& a, float s);
/** a *= s in place. */
void scale_(Tensor& a, float s);
/** Sum of all elements, shape []. torch.sum. */
Tensor sum(const Tensor& a);
/** Index of the max of each row of x[N, C], int64 [N]. torch.argmax(x, 1). */
Tensor argmax_rows(const Tensor& x);

// ---- shape (src/core/ops_shape.cpp; ShapeNatives). Any dtype unless said; dims may be negative
// (counted from the end); outputs are new contiguous tensors (the native tensor has no strides).
/** x with its dimensions reordered (a permutation of 0..dim-1). torch.permute(...).contiguous(). */
Tensor permute(const Tensor& x, const std::vector<int64_t>& dims);
/** x with dims d0 and d1 swapped. torch.transpose(...).contiguous(). */
Tensor transpose(const Tensor& x, int64_t d0, int64_t d1);
/** The tensors joined along dim: one dtype and device, equal sizes elsewhere. torch.cat. */
Tensor cat(const std::vector<Tensor>& xs, int64_t dim);
/** Elements [start, start + length) of x along dim. torch.narrow(...).contiguous(). */
Tensor narrow(const Tensor& x, int64_t dim, int64_t start, int64_t length);
/** Gradient of narrow: zeros of x_shape with gy in the narrowed part. */
Tensor narrow_backward(const Tensor& gy, const Shape& x_shape, int64_t dim, int64_t start);
/** x's slices at index (int64, 1-D or scalar, values in [0, x.size(dim))) along dim. torch.index_select. */
Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index);
/** Gradient of index_select for float32 x of x_shape: repeated indices add up (in index order). */
Tensor index_select_backward(const Tensor& gy, const Shape& x_shape, int64_t dim, const Tensor& index);
/** torch.gather: index int64 with x's number of dims, index.size(d) <= x.size(d) for d != dim, values in range. */
Tensor gather(const Tensor& x, int64_t dim, const Tensor& index);
/** Gradient of gather for float32 x of x_shape: gy scatter-added at index (torch.scatter_add, in index order). */
Tensor gather_backward(const Tensor& gy, const Shape& x_shape, int64_t dim, const Tensor& index);
/** torch.tril (upper false) / torch.triu (upper true) of x (at least 2-D; float32, int64 or bool). */
Tensor triangle(const Tensor& x, int64_t diagonal, bool upper);

// ---- broadcast (src/core/ops_broadcast.cpp; BroadcastNatives): PyTorch broadcasting ------------
/**
 * a op b broadcast (ddp4j/broadcast.h). Add, Sub, Mul, Div: float32 operands and result;
 * comparisons: operands of one dtype (float32, int64 or bool), a bool result.
 */
Tensor broadcast_binary(const Tensor& a, const Tensor& b, kernels::BinaryOp op);
/** condition (bool) ? a : b, all three broadcast; a and b of one dtype. torch.where. */
Tensor where(const Tensor& condition, const Tensor& a, const Tensor& b);
/** x with value where mask (bool, broadcastable to x's shape) is true. torch.Tensor.masked_fill. */
Tensor masked_fill(const Tensor& x, const Tensor& mask, double value);

// ---- unary (src/core/ops_unary.cpp; UnaryNatives) ---------------------------------------------
/** op(x): float32 for all but LogicalNot, which takes and gives bool. torch.exp, log, tanh, pow, sqrt, neg, logical_not, x + s, x * s, x / s. */
Tensor unary(const Tensor& x, kernels::UnaryOp op, double scalar);

// ---- reduce (src/core/ops_reduce.cpp; ReduceNatives). float32; dims may be negative --------------
/** Sum (or mean) over dims (none: all), summed in double; keepdim keeps them as size 1. torch.sum / torch.mean with dim. */
Tensor sum_dims(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim, bool mean);
/** {values, indices (int64)} of the max along dim (first on ties). torch.max(x, dim, keepdim). */
std::vector<Tensor> max_dim(const Tensor& x, int64_t dim, bool keepdim);
/** softmax (log false) or log_softmax (log true) along dim. torch.softmax / torch.log_softmax. */
Tensor softmax(const Tensor& x, int64_t dim, bool log);
/** Their gradient from the forward output y. */
Tensor softmax_backward(const Tensor& gy, const Tensor& y, int64_t dim, bool log);

// ---- matmul (src/core/ops_matmul.cpp; MatmulNatives) ---------------------------------------------
/**
 * torch.matmul of a and b of at least 2 dims (float32): op(a)[..., m, k] · op(b)[..., k, n] with
 * the batch dims broadcast; trans_a / trans_b read a / b with the last two dims swapped (the
 * backward's operands, no copies).
 */
Tensor matmul(const Tensor& a, const Tensor& b, bool trans_a, bool trans_b);

// ---- autocast and GradScaler (src/core/ops_amp.cpp; AmpNatives) --------------------------------
/** x rounded to low (BFloat16 or Float16, nearest even) and widened back: a new float32 tensor. */
Tensor round_to_low_precision(const Tensor& x, DType low);
/**
 * torch._amp_foreach_non_finite_check_and_unscale_ for one tensor: x *= inv_scale in place and
 * found (float32 [1] on x's device) is set to 1 when x held an inf or NaN before (never reset to 0).
 */
void non_finite_check_and_unscale_(Tensor& x, float inv_scale, Tensor& found);
/** The CPU's bfloat16 GEMM kernel now: "avx512bf16" or "widen" (cpu/gemm.h). */
const char* autocast_cpu_kernel();
/** Forces it ("avx512bf16", "widen"; tests); InvalidArgument if unknown or the CPU cannot run it. */
void set_autocast_cpu_kernel(const char* name);

// ---- layers (src/core/ops_linear.cpp, ops_conv.cpp, ops_norm.cpp, ops_pool.cpp) ----------------
/** torch.nn.functional.linear: x[N, in], w[out, in], b[out] or undefined -> [N, out]. */
Tensor linear_forward(const Tensor& x, const Tensor& w, const Tensor& b);
/**
 * Autocast's linear (torch.autocast's linear on CPU/CUDA): x and w rounded to compute (BFloat16 or
 * Float16) and multiplied with float32 accumulation; output float32. Float32: linear_forward.
 * Throws InvalidArgument for another compute dtype.
 */
Tensor linear_forward(const Tensor& x, const Tensor& w, const Tensor& b, DType compute);
/** Returns {gx, gw, gb}; gx / gb undefined when need_gx / b undefined. */
std::vector<Tensor> linear_backward(const Tensor& gy, const Tensor& x, const Tensor& w, bool need_gx, bool has_bias);
/** linear_backward with gy, x and w rounded to compute (autocast; see the compute linear_forward). */
std::vector<Tensor> linear_backward(const Tensor& gy, const Tensor& x, const Tensor& w, bool need_gx, bool has_bias,
                                    DType compute);
/**
 * torch.addmm(b, x, w) with x [*, in] (addmm takes [N, in]; Hugging Face's Conv1D views its input
 * to that): b[out] (or undefined) + x · w for w [in, out], read in place (no transposed copy), under
 * autocast's compute dtype as the compute linear_forward. Throws InvalidArgument naming the shapes.
 */
Tensor addmm_forward(const Tensor& b, const Tensor& x, const Tensor& w, DType compute);
/** addmm_forward's {gx, gw [in, out], gb}; gx / gb undefined when need_gx / has_bias are false. */
std::vector<Tensor> addmm_backward(const Tensor& gy, const Tensor& x, const Tensor& w, bool need_gx, bool has_bias,
                                   DType compute);
Tensor relu_forward(const Tensor& x);
Tensor relu_backward(const Tensor& gy, const Tensor& y);

/** torch.nn.functional.conv2d: x[N, C, H, W], w[K, C/groups, R, S], b[K] or undefined -> [N, K, P, Q]. */
Tensor conv2d_forward(const Tensor& x, const Tensor& w, const Tensor& b, const kernels::Conv2dGeometry& g);
/** Returns {gx, gw, gb}. */
std::vector<Tensor> conv2d_backward(const Tensor& gy, const Tensor& x, const Tensor& w, bool need_gx, bool has_bias,
                                    const kernels::Conv2dGeometry& g);

/** Training BatchNorm2d: returns {y, save_mean, save_invstd}; updates running stats in place. */
std::vector<Tensor> batch_norm2d_forward_train(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                               Tensor& running_mean, Tensor& running_var, double momentum,
                                               double eps);
Tensor batch_norm2d_forward_eval(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                 const Tensor& running_mean, const Tensor& running_var, double eps);
/** Returns {gx, ggamma, gbeta}. */
std::vector<Tensor> batch_norm2d_backward(const Tensor& gy, const Tensor& x, const Tensor& gamma,
                                          const Tensor& save_mean, const Tensor& save_invstd);
/**
 * Training BatchNorm2d + (residual) + ReLU in one pass: relu(batch_norm(x) + residual), residual
 * undefined or of x's shape. Returns {y, save_mean, save_invstd, affine [2, C]} (affine: the
 * scale and shift y was made with, for batch_norm2d_recompute); updates running stats in place.
 */
std::vector<Tensor> batch_norm2d_relu_forward_train(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                                    Tensor& running_mean, Tensor& running_var, double momentum,
                                                    double eps, const Tensor& residual);
/**
 * The y of batch_norm2d_forward_train (relu false, residual undefined) or of
 * batch_norm2d_relu_forward_train (relu true, the same residual) again, bit for bit, from its
 * input x and its affine output. Throws InvalidArgument unless x is float32 [N, C, H, W], affine
 * float32 [2, C] and residual undefined or like x, all on x's device, and residual only with relu.
 */
Tensor batch_norm2d_recompute(const Tensor& x, const Tensor& affine, const Tensor& residual, bool relu);
/** Eval form of batch_norm2d_relu_forward_train (running statistics). */
Tensor batch_norm2d_relu_forward_eval(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                      const Tensor& running_mean, const Tensor& running_var, double eps,
                                      const Tensor& residual);
/**
 * Gradients of batch_norm2d_relu_forward_train from its output y: {gx, ggamma, gbeta} and, with
 * want_masked, also the ReLU's gradient (the residual's) as a fourth tensor. For a forward without
 * residual, y may be undefined and affine (that forward's fourth output) given instead: the ReLU's
 * mask is then formed from x, with the same bits. Throws InvalidArgument unless exactly one of y
 * and affine is given, with the shapes named.
 */
std::vector<Tensor> batch_norm2d_relu_backward(const Tensor& gy, const Tensor& y, const Tensor& x, const Tensor& gamma,
                                               const Tensor& save_mean, const Tensor& save_invstd, bool want_masked,
                                               const Tensor& affine = Tensor());

// ---- SyncBatchNorm (src/core/ops_sync_batch_norm.cpp; SyncBatchNormNatives). x is float32
// [N, C, ...] (at least 2-D, N may be 0); per-channel tensors float32 [C] on x's device.
/** This rank's row for the group: float32 [3C + 2] (kernels::sync_batch_norm_stats_fn's layout). */
Tensor sync_batch_norm_stats(const Tensor& x);
/**
 * Combines the rows of all ranks, gathered[W, 3C + 2] (or [W * (3C + 2)]): returns {save_mean [C],
 * save_invstd [C], save_mean_lo [C]} (the mean is save_mean + save_mean_lo) and updates running_mean / running_var when defined (both or neither), and sets
 * *total_count to Σ counts. Throws InvalidArgument (before updating anything) when the total count
 * is at most 1: "expected more than 1 value per channel when training", as PyTorch.
 */
std::vector<Tensor> sync_batch_norm_gather_stats(const Tensor& gathered, int64_t channels, Tensor& running_mean,
                                                 Tensor& running_var, double momentum, double eps,
                                                 int64_t* total_count);
/**
 * y = (x - (mean + mean_lo)) * invstd * gamma + beta per channel (torch.batch_norm_elemt); with
 * relu, relu(y + residual) (residual undefined: none; else float32 of x's shape) in the same pass.
 */
Tensor sync_batch_norm_elemt(const Tensor& x, const Tensor& mean, const Tensor& mean_lo, const Tensor& invstd,
                             const Tensor& gamma, const Tensor& beta, const Tensor& residual = Tensor(),
                             bool relu = false);
/** {sums [2C] = (Σ gy, Σ gy (x - mean)), ggamma [C], gbeta [C]} of this rank (torch.batch_norm_backward_reduce). */
std::vector<Tensor> sync_batch_norm_backward_reduce(const Tensor& gy, const Tensor& x, const Tensor& mean,
                                                    const Tensor& mean_lo, const Tensor& invstd);
/** gx from the all-reduced sums [2C] and the total count (torch.batch_norm_backward_elemt). */
Tensor sync_batch_norm_backward_elemt(const Tensor& gy, const Tensor& x, const Tensor& mean, const Tensor& mean_lo,
                                      const Tensor& invstd, const Tensor& gamma, const Tensor& sums, int64_t count);

/** Returns {y, indices}. */
std::vector<Tensor> max_pool2d_forward(const Tensor& x, const kernels::Pool2dGeometry& g);
/** x_shape is the forward input's shape. */
Tensor max_pool2d_backward(const Tensor& gy, const Tensor& indices, const Shape& x_shape);
/**
 * PyTorch's pooling_output_shape: floor (or ceil with ceil_mode) of (size + 2 pad - dilation
 * (kernel - 1) - 1) / stride, plus 1; in ceil mode a last window that would start past the input
 * and its left padding is dropped.
 */
int64_t pool2d_output_size(int64_t size, int kernel, int stride, int pad, int dilation, bool ceil_mode);
/** torch.nn.functional.avg_pool2d: x[N, C, H, W] -> [N, C, P, Q]; divisor_override 0 means none. */
Tensor avg_pool2d_forward(const Tensor& x, const kernels::Pool2dGeometry& g, bool count_include_pad,
                          int64_t divisor_override);
/** x_shape is the forward input's shape. */
Tensor avg_pool2d_backward(const Tensor& gy, const Shape& x_shape, const kernels::Pool2dGeometry& g,
                           bool count_include_pad, int64_t divisor_override);
/** torch.nn.functional.adaptive_avg_pool2d: x[N, C, H, W] -> [N, C, out_h, out_w]. */
Tensor adaptive_avg_pool2d_forward(const Tensor& x, int64_t out_h, int64_t out_w);
/** x_shape is the forward input's shape. */
Tensor adaptive_avg_pool2d_backward(const Tensor& gy, const Shape& x_shape);

// ---- losses (src/core/ops_loss.cpp) -------------------------------------------------------------
Tensor mse_loss_forward(const Tensor& input, const Tensor& target);
Tensor mse_loss_backward(const Tensor& gout, const Tensor& input, const Tensor& target);
/** Returns {loss, probs}. */
std::vector<Tensor> cross_entropy_forward(const Tensor& logits, const Tensor& target);
Tensor cross_entropy_backward(const Tensor& gout, const Tensor& probs, const Tensor& target);

// ---- optimiser (src/core/ops_sgd.cpp) -----------------------------------------------------------
void sgd_step_(Tensor& param, const Tensor& grad, Tensor& momentum_buf, const kernels::SgdOptions& o, bool first);
/**
 * One torch.optim.Adam / AdamW update (src/core/ops_adam.cpp; AdamNatives): checks the
 * hyper-parameters with PyTorch's wording, float32 and one device and shape for every tensor, and
 * step >= 1, then runs kernels::adam_step_fn in place.
 */
void adam_step_(Tensor& param, const Tensor& grad, Tensor& exp_avg, Tensor& exp_avg_sq, Tensor& max_exp_avg_sq,
                const kernels::AdamOptions& o, int64_t step);
/**
 * adam_step_ for a whole parameter group in one call (the same checks for each entry, one device
 * for all): one pass split among the CPU's threads, or one kernel per entry on other devices.
 */
void adam_steps_(std::vector<kernels::AdamTensors>& group, const kernels::AdamOptions& o);

// ---- shared checks ------------------------------------------------------------------------------
/** Throws InvalidArgument "<op>: <what> must be float32, got ..." etc. */
void check_dtype(const char* op, const char* what, const Tensor& t, DType dtype);
void check_dim(const char* op, const char* what, const Tensor& t, int dim);
void check_same_device(const char* op, const Tensor& a, const Tensor& b);
void check_same_shape(const char* op, const Tensor& a, const Tensor& b);
/** A per-channel tensor (batch norm's gamma, beta, running or saved statistics) must be float32 [C], C = x.size(1), on x's device. */
void check_channel_tensor(const char* op, const char* what, const Tensor& x, const Tensor& t);
/** Throws InvalidArgument unless compute is Float32 (no autocast), BFloat16 or Float16. */
void check_autocast_dtype(const char* op, DType compute);

}  // namespace ddp4j::ops
