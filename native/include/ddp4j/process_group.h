// process_group.h: the backend-neutral collective API. A ProcessGroup is one rank's handle on a
// group of `size` processes; every collective is asynchronous and returns a Work to wait on.
// Backends: Gloo (CPU tensors, native/src/comm/gloo/process_group.*, in libddp4j.so); NCCL (CUDA
// tensors, native/src/cuda/nccl/nccl_process_group.*, in libddp4j_cuda.so, which subclasses Work and
// ProcessGroup so that the JNI layer of libddp4j.so serves both through these virtual functions).
// Mirrors torch.distributed's ProcessGroup / Work / ReduceOp.
#pragma once
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "ddp4j/tensor.h"

namespace ddp4j {

class FlightRecorder;

/**
 * Element-wise reduction of allreduce. Values match org.ddp4j.distributed.ReduceOp ordinals and
 * PyTorch's c10d::ReduceOp::RedOpType numbering (SUM 0, AVG 1, PRODUCT 2, MIN 3, MAX 4).
 * AVG is SUM followed by a division by the world size, on floating dtypes only (float32, bfloat16,
 * float16; int64 is refused).
 */
enum class ReduceOp : int32_t { SUM = 0, AVG = 1, PRODUCT = 2, MIN = 3, MAX = 4 };
constexpr int kNumReduceOps = 5;

/** "SUM", "AVG", ... for messages. */
const char* reduce_op_name(ReduceOp op);

/** "1 s", "250 ms", "30 min": a timeout for messages. */
std::string duration_str(std::chrono::milliseconds d);

/**
 * The handle of one asynchronous collective. Mirrors torch.distributed.Work (c10d::Work). Thread-safe:
 * any thread may wait; the backend completes it exactly once with finish(). Until then it keeps the
 * tensors it was given alive (copies of Tensor share storage), so a caller that drops its own
 * references early cannot free memory the collective still writes.
 *
 * The base class is a host-side completion (Gloo: the worker thread calls finish()). A backend
 * whose completion must be polled (NCCL: a CUDA event) overrides is_completed, wait and
 * synchronize.
 */
class Work {
 public:
  /** `description` names the op for messages, e.g. "allReduce(SUM) of 10 float32 elements". */
  explicit Work(std::string description, std::vector<Tensor> keep_alive = {});
  /**
   * As above, with the description made only when a message or description() first needs it: a
   * microsecond collective should not spend a microsecond formatting a string nobody reads.
   */
  Work(std::function<std::string()> describe, std::vector<Tensor> keep_alive);
  virtual ~Work() = default;
  Work(const Work&) = delete;
  Work& operator=(const Work&) = delete;

  /** Whether the op has finished, successfully or not. Never blocks. Mirrors Work.is_completed(). */
  virtual bool is_completed();

  /**
   * Blocks the host until the op finishes, then rethrows its error (a ddp4j::Error of kind
   * Distributed or Timeout) if it failed. A timeout <= 0 waits without limit (the op itself is
   * bounded by its group's timeout). Throws Error(Timeout) naming the op if it has not finished in
   * time; the op keeps running in that case. Mirrors Work.wait(timeout).
   */
  virtual void wait(std::chrono::milliseconds timeout = std::chrono::milliseconds(0));

  /**
   * Makes the results visible to the work that follows on this device: on the CPU that is wait()
   * (blocks the host until the op finished); a GPU backend instead orders the device's compute
   * stream after the op without blocking the host. Throws the op's error if it has already failed
   * (Error Distributed or Timeout). Mirrors Work.synchronize() / PyTorch's work.wait() without a
   * timeout.
   */
  virtual void synchronize();

  /** The op's error, or null if it succeeded or is still running. */
  std::exception_ptr error() const;

  /** The op's description; made on first use when the Work was given a describe function. Thread-safe. */
  const std::string& description() const;

  /** Marks the op finished (error null on success), releases its tensors and wakes waiters. Backends only. */
  void finish(std::exception_ptr error = nullptr);

 private:
  std::function<std::string()> describe_;
  mutable std::once_flag described_;
  mutable std::string description_;
  std::vector<Tensor> keep_alive_;
  mutable std::mutex mutex_;
  std::condition_variable done_cv_;
  bool done_ = false;
  std::exception_ptr error_;
};

/**
 * One rank's membership of a group of processes, with asynchronous collectives. Every rank must
 * call the same collectives in the same order with tensors of the same dtype and element count;
 * backends report a violation as Error(Distributed) rather than hanging or crashing.
 *
 * Tensors are contiguous; ops run in place on the tensor's storage. Errors surface through
 * Work::wait; argument errors (wrong device, dtype, sizes known locally) throw
 * Error(InvalidArgument) at the call.
 */
class ProcessGroup {
 public:
  ProcessGroup(int rank, int size) : rank_(rank), size_(size) {}
  virtual ~ProcessGroup() = default;
  ProcessGroup(const ProcessGroup&) = delete;
  ProcessGroup& operator=(const ProcessGroup&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  /** "gloo" or "nccl". */
  virtual std::string backend() const = 0;

  /**
   * The group's record of its last collectives and transfers (comm/flight_recorder.h), or null
   * for a backend without one. Lives as long as the group.
   */
  virtual const FlightRecorder* flight_recorder() const { return nullptr; }

  /** Reduces `tensor` element-wise across ranks, in place, on every rank. Mirrors all_reduce. */
  virtual std::shared_ptr<Work> allreduce(const Tensor& tensor, ReduceOp op) = 0;

  /**
   * DDP's all-reduce of its bucket `bucket` (0-based) of `buckets`: a backend may replace its
   * up-front agreement check (a round trip) by one that travels with the data, naming the bucket
   * in its messages, and with `run_inline` run the op on the calling thread when nothing else is
   * queued (the returned Work is then complete). See ProcessGroupGloo::allreduce_bucket for
   * what Gloo catches. Default: allreduce (NCCL: a mismatch hangs until the timeout).
   */
  virtual std::shared_ptr<Work> allreduce_bucket(const Tensor& tensor, ReduceOp op, bool run_inline,
                                                 int bucket = -1, int buckets = 0) {
    (void)run_inline;
    (void)bucket;
    (void)buckets;
    return allreduce(tensor, op);
  }

  /** Copies root's `tensor` into every other rank's `tensor`. Mirrors broadcast(tensor, src=root). */
  virtual std::shared_ptr<Work> broadcast(const Tensor& tensor, int root) = 0;

  /**
   * Gathers every rank's `input` into `output` (size() * input.numel() elements, same dtype),
   * rank r's block at offset r * input.numel(). Mirrors all_gather_into_tensor.
   */
  virtual std::shared_ptr<Work> allgather(const Tensor& output, const Tensor& input) = 0;

  /**
   * Gathers every rank's `input` into outputs[r] (size() tensors, each with input's dtype and
   * element count). Mirrors all_gather(tensor_list, tensor).
   */
  virtual std::shared_ptr<Work> allgather(const std::vector<Tensor>& outputs, const Tensor& input) = 0;

  /** Completes once every rank has entered the barrier. Mirrors barrier. */
  virtual std::shared_ptr<Work> barrier() = 0;

  /**
   * Reduces every rank's `tensor` element-wise into rank `root`'s `tensor` (in place there);
   * the other ranks' tensors are left as they were. Same dtype and element count on every rank;
   * AVG: floating dtypes only (not int64). Mirrors reduce(tensor, dst=root, op).
   */
  virtual std::shared_ptr<Work> reduce(const Tensor& tensor, int root, ReduceOp op) = 0;

  /**
   * Reduces every rank's `input` (size() * n elements) element-wise and leaves block rank() of
   * the result (elements [rank() * n, (rank() + 1) * n)) in `output` (n elements, input's dtype).
   * Mirrors reduce_scatter_tensor(output, input, op).
   */
  virtual std::shared_ptr<Work> reduce_scatter(const Tensor& output, const Tensor& input, ReduceOp op) = 0;

  /**
   * As above with the input given as size() tensors: rank r's block is inputs[r] (each with
   * output's dtype and element count). Mirrors reduce_scatter(output, input_list, op).
   */
  virtual std::shared_ptr<Work> reduce_scatter(const Tensor& output, const std::vector<Tensor>& inputs,
                                               ReduceOp op) = 0;

  /**
   * Sends `tensor` to group rank `dst`, where a recv(tensor, src = this rank, tag) receives it.
   * Sends from one rank to another with one tag arrive in the order they were issued; different
   * tags are matched independently. Completes once the data has left this rank's buffer. Not a
   * collective: only the two ranks take part, and it does not count in the group's collective
   * numbering. tag >= 0 (NCCL ignores tags, as PyTorch's NCCL backend does). Mirrors
   * isend(tensor, dst, tag).
   */
  virtual std::shared_ptr<Work> send(const Tensor& tensor, int dst, int tag) = 0;

  /** Receives into `tensor` what group rank `src` sends with `tag` (see send). Mirrors irecv(tensor, src, tag). */
  virtual std::shared_ptr<Work> recv(const Tensor& tensor, int src, int tag) = 0;

 protected:
  /**
   * The argument checks every backend's allgather(outputs, input) shares: one output per rank, each
   * first passed to the backend's `check_output` (device, dtype), then required to have the input's
   * dtype and element count. Throws Error(InvalidArgument) naming the output.
   */
  void check_allgather_outputs(const std::vector<Tensor>& outputs, const Tensor& input,
                               const std::function<void(const Tensor&)>& check_output) const;

  /**
   * The argument checks of reduce_scatter(output, inputs): one input per rank, each passed to
   * `check_input`, then required to have output's dtype and element count. Throws
   * Error(InvalidArgument) naming the input.
   */
  void check_reduce_scatter_inputs(const Tensor& output, const std::vector<Tensor>& inputs,
                                   const std::function<void(const Tensor&)>& check_input) const;

  /**
   * The check every backend's reduce, send and recv share: `peer` (the `role`: "destination",
   * "source") in [0, size()), and not this rank unless `may_be_self` (a rank cannot send to
   * itself). Throws Error(InvalidArgument) naming `op` and the fix.
   */
  void check_peer(const char* op, const char* role, int peer, bool may_be_self) const;

 private:
  const int rank_;
  const int size_;
};

}  // namespace ddp4j
