// nccl_work.h: the Work of one NCCL collective (completion seen through its end event) and the
// abort state that an ProcessGroupNccl shares with its works.
#pragma once
#include <cuda_runtime.h>

#include <atomic>
#include <chrono>
#include <exception>
#include <mutex>
#include <string>
#include <vector>

#include "ddp4j/process_group.h"

namespace ddp4j {

/**
 * The longest timeout honoured (100 years): a longer one, e.g. Long.MAX_VALUE ms for "no limit",
 * would overflow steady_clock's nanoseconds and expire at once.
 */
constexpr std::chrono::milliseconds kMaxNcclTimeout = std::chrono::hours(24 * 365 * 100);

/** What the group and its works share: whether the communicator was aborted, and why. */
struct NcclAbortState {
  std::atomic<bool> aborted{false};
  std::mutex mutex;
  std::string reason;  // guarded by mutex
};

namespace nccl_detail {
/** The error of a work that the abort of the communicator cut short, quoting the abort's reason. */
std::exception_ptr aborted_error(const NcclAbortState& state, const std::string& description);
}  // namespace nccl_detail

/**
 * The Work of one NCCL collective. The collective is queued on the communication stream between
 * a start event (which waits for the compute stream) and an end event. Completion on the GPU is
 * seen by querying the end event (cudaEventQuery), by the group's watchdog or by a blocking
 * waiter. The tensors stay referenced until the end event has completed, even when the work
 * failed or timed out (NCCL may still write them), so the caching allocator cannot reuse their
 * memory early.
 */
class NcclWork : public Work {
 public:
  NcclWork(std::string description, int device, cudaEvent_t end, std::vector<Tensor> tensors, bool blocking_sync,
           std::shared_ptr<NcclAbortState> abort_state, std::string timeout_hint = std::string());
  ~NcclWork() override;

  /**
   * Mirrors PyTorch's work.wait() for NCCL: makes the device's compute stream wait for the end
   * event (cudaStreamWaitEvent), so kernels queued after this call see the result; the host does
   * not block. Barriers (blocking_sync) wait on the host instead, as PyTorch's barrier does.
   * Throws the collective's error if it has already failed (Error Distributed or Timeout).
   */
  void synchronize() override;

  /**
   * Blocks the host until the collective has finished on the GPU, then throws its error if it
   * failed. `timeout` <= 0 waits without a limit of its own (the group's watchdog still bounds the
   * collective by the group's timeout). Throws Error(Timeout) naming the op if it is still running
   * after `timeout` (it keeps running). Polls the end event with a short back-off; never hangs on
   * a dead peer, because the watchdog aborts the communicator.
   */
  void wait(std::chrono::milliseconds timeout = std::chrono::milliseconds(0)) override;

  /**
   * Queries the end event: true once the collective has finished on the GPU (its tensors are then
   * released). Never blocks. A CUDA error from the query counts as finished, and is reported.
   */
  bool poll_gpu();

  /**
   * Whether the work has finished, without blocking: completes it here when the end event has
   * completed (rather than waiting for the watchdog's next round). Mirrors work.is_completed().
   */
  bool is_completed() override;

  /** Whether poll_gpu has seen the end event complete. */
  bool gpu_done() const { return gpu_done_.load(); }

  int device() const { return device_; }
  /** What the watchdog adds to its timeout message for this kind of op ("" for collectives). */
  const std::string& timeout_hint() const { return timeout_hint_; }

 private:
  const int device_;
  const std::string timeout_hint_;
  cudaEvent_t end_;
  const bool blocking_sync_;
  std::shared_ptr<NcclAbortState> abort_state_;
  std::mutex tensors_mutex_;
  std::vector<Tensor> tensors_;  // released once the end event has completed
  std::atomic<bool> gpu_done_{false};
  std::exception_ptr gpu_error_;  // a CUDA error seen by poll_gpu (guarded by tensors_mutex_)

  void complete_from_gpu();
};

}  // namespace ddp4j
