// SyncBatchNorm ops: argument checks (messages name the op and the shapes), output allocation,
// dispatch. The collectives between these steps run in Java, on the group (SyncBatchNormFunction).
#include <cmath>
#include <vector>

#include "ddp4j/dispatch.h"
#include "ddp4j/ops.h"

namespace ddp4j::ops {
namespace {

constexpr const char* kOp = "sync_batch_norm";

void check_input(const char* op, const char* what, const Tensor& x) {
  check_dtype(op, what, x, DType::Float32);
  DDP4J_CHECK_ARG(x.dim() >= 2, op, ": ", what, " must be at least 2-D [N, C, ...], got shape ", shape_str(x.shape()));
}

void check_like_input(const char* op, const Tensor& gy, const Tensor& x) {
  check_dtype(op, "grad_output", gy, DType::Float32);
  check_same_device(op, gy, x);
  DDP4J_CHECK_ARG(gy.shape() == x.shape(), op, ": grad_output ", shape_str(gy.shape()), " does not match input ",
                  shape_str(x.shape()));
}

/** The count a row holds: count_hi * 2^24 + count_lo (both exact in float32). */
int64_t row_count(const float* row) {
  return static_cast<int64_t>(row[0]) * (int64_t{1} << 24) + static_cast<int64_t>(row[1]);
}

}  // namespace

Tensor sync_batch_norm_stats(const Tensor& x) {
  constexpr const char* op = "sync_batch_norm_stats";
  check_input(op, "input", x);
  Tensor stats = Tensor::empty({3 * x.size(1) + 2}, DType::Float32, x.device());
  static KernelSlot slot("sync_batch_norm_stats");
  slot.get<kernels::sync_batch_norm_stats_fn>(x.device())(x, stats);
  return stats;
}

std::vector<Tensor> sync_batch_norm_gather_stats(const Tensor& gathered, int64_t channels, Tensor& running_mean,
                                                 Tensor& running_var, double momentum, double eps,
                                                 int64_t* total_count) {
  constexpr const char* op = "sync_batch_norm_gather_stats";
  check_dtype(op, "gathered statistics", gathered, DType::Float32);
  const int64_t row = 3 * channels + 2;
  DDP4J_CHECK_ARG(channels > 0 && gathered.numel() > 0 && gathered.numel() % row == 0, op, ": gathered statistics ",
                  shape_str(gathered.shape()), " are not rows of 3 * ", channels, " + 2 values (one per rank)");
  DDP4J_CHECK_ARG(running_mean.defined() == running_var.defined(), op,
                  ": give both running_mean and running_var, or neither");
  DDP4J_CHECK_ARG(eps >= 0 && std::isfinite(eps), kOp, ": eps must be a non-negative number, got ", eps);
  DDP4J_CHECK_ARG(std::isfinite(momentum), kOp, ": momentum must be a number, got ", momentum);
  const int64_t world = gathered.numel() / row;
  Tensor rows = gathered.view({world, row});
  if (running_mean.defined()) {
    for (const Tensor* t : {&running_mean, &running_var}) {
      check_dtype(op, "running statistics", *t, DType::Float32);
      check_same_device(op, gathered, *t);
      DDP4J_CHECK_ARG(t->dim() == 1 && t->size(0) == channels, op, ": running statistics ", shape_str(t->shape()),
                      " do not have ", channels, " channels");
    }
  }
  // The counts decide whether there is a variance at all; on a GPU this reads the small gathered
  // tensor back (PyTorch's SyncBatchNorm reads the total count too).
  Tensor host = to_device(rows, Device{});
  int64_t total = 0;
  std::string counts;
  for (int64_t r = 0; r < world; ++r) {
    const int64_t n = row_count(host.data<float>() + r * row);
    DDP4J_CHECK_ARG(n >= 0, op, ": rank ", r, "'s row holds a negative count (", n, "): not sync_batch_norm_stats output");
    total += n;
    counts += (r ? ", " : "") + std::to_string(n);
  }
  DDP4J_CHECK_ARG(total > 1, kOp, ": expected more than 1 value per channel when training, got ", total,
                  " over the group's ", world, " ranks (values per channel on each rank: [", counts,
                  "]); give the ranks larger batches, or use eval mode");
  *total_count = total;
  Tensor save_mean = Tensor::empty({channels}, DType::Float32, gathered.device());
  Tensor save_mean_lo = Tensor::empty({channels}, DType::Float32, gathered.device());
  Tensor save_invstd = Tensor::empty({channels}, DType::Float32, gathered.device());
  static KernelSlot slot("sync_batch_norm_gather_stats");
  slot.get<kernels::sync_batch_norm_gather_stats_fn>(gathered.device())(rows, running_mean, running_var, momentum, eps,
                                                                         save_mean, save_mean_lo, save_invstd);
  return {save_mean, save_invstd, save_mean_lo};
}

Tensor sync_batch_norm_elemt(const Tensor& x, const Tensor& mean, const Tensor& mean_lo, const Tensor& invstd,
                             const Tensor& gamma, const Tensor& beta, const Tensor& residual, bool relu) {
  constexpr const char* op = "sync_batch_norm_elemt";
  check_input(op, "input", x);
  check_channel_tensor(op, "mean", x, mean);
  check_channel_tensor(op, "mean_lo", x, mean_lo);
  check_channel_tensor(op, "invstd", x, invstd);
  check_channel_tensor(op, "weight", x, gamma);
  check_channel_tensor(op, "bias", x, beta);
  if (residual.defined()) {
    DDP4J_CHECK_ARG(relu, op, ": a residual is added only before the ReLU (relu=true)");
    check_dtype(op, "residual", residual, DType::Float32);
    check_same_device(op, x, residual);
    DDP4J_CHECK_ARG(residual.shape() == x.shape(), op, ": residual ", shape_str(residual.shape()),
                    " does not match input ", shape_str(x.shape()));
  }
  Tensor y = Tensor::empty(x.shape(), DType::Float32, x.device());
  static KernelSlot slot("sync_batch_norm_elemt");
  slot.get<kernels::sync_batch_norm_elemt_fn>(x.device())(x, mean, mean_lo, invstd, gamma, beta, residual, relu, y);
  return y;
}

std::vector<Tensor> sync_batch_norm_backward_reduce(const Tensor& gy, const Tensor& x, const Tensor& mean,
                                                    const Tensor& mean_lo, const Tensor& invstd) {
  constexpr const char* op = "sync_batch_norm_backward_reduce";
  check_input(op, "input", x);
  check_like_input(op, gy, x);
  check_channel_tensor(op, "mean", x, mean);
  check_channel_tensor(op, "mean_lo", x, mean_lo);
  check_channel_tensor(op, "invstd", x, invstd);
  const int64_t c = x.size(1);
  Tensor sums = Tensor::empty({2 * c}, DType::Float32, x.device());
  Tensor ggamma = Tensor::empty({c}, DType::Float32, x.device());
  Tensor gbeta = Tensor::empty({c}, DType::Float32, x.device());
  static KernelSlot slot("sync_batch_norm_backward_reduce");
  slot.get<kernels::sync_batch_norm_backward_reduce_fn>(x.device())(gy, x, mean, mean_lo, invstd, sums, ggamma,
                                                                    gbeta);
  return {sums, ggamma, gbeta};
}

Tensor sync_batch_norm_backward_elemt(const Tensor& gy, const Tensor& x, const Tensor& mean, const Tensor& mean_lo,
                                      const Tensor& invstd, const Tensor& gamma, const Tensor& sums, int64_t count) {
  constexpr const char* op = "sync_batch_norm_backward_elemt";
  check_input(op, "input", x);
  check_like_input(op, gy, x);
  check_channel_tensor(op, "mean", x, mean);
  check_channel_tensor(op, "mean_lo", x, mean_lo);
  check_channel_tensor(op, "invstd", x, invstd);
  check_channel_tensor(op, "weight", x, gamma);
  check_dtype(op, "gradient sums", sums, DType::Float32);
  check_same_device(op, x, sums);
  DDP4J_CHECK_ARG(sums.numel() == 2 * x.size(1), op, ": gradient sums ", shape_str(sums.shape()), " are not 2 * ",
                  x.size(1), " values");
  DDP4J_CHECK_ARG(count > 0, op, ": the total count must be positive, got ", count);
  Tensor gx = Tensor::empty(x.shape(), DType::Float32, x.device());
  static KernelSlot slot("sync_batch_norm_backward_elemt");
  slot.get<kernels::sync_batch_norm_backward_elemt_fn>(x.device())(gy, x, mean, mean_lo, invstd, gamma, sums, count,
                                                                   gx);
  return gx;
}

}  // namespace ddp4j::ops
