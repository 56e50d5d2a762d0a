// NcclWork: completion through the end event, waiting on the host or on the compute stream;
// see nccl_work.h.
#include "cuda/nccl/nccl_work.h"

#include <algorithm>

#include "cuda/cuda_context.h"
#include "cuda/nccl/nccl_backoff.h"

namespace ddp4j {

using Clock = std::chrono::steady_clock;
using Millis = std::chrono::milliseconds;
using nccl_detail::aborted_error;
using nccl_detail::Backoff;

std::exception_ptr nccl_detail::aborted_error(const NcclAbortState& state, const std::string& description) {
  std::string reason;
  {
    std::lock_guard<std::mutex> lock(const_cast<NcclAbortState&>(state).mutex);
    reason = state.reason;
  }
  return std::make_exception_ptr(Error(
      ErrorKind::Distributed,
      detail::concat(description, " did not complete: the NCCL communicator was aborted (", reason,
                     "); its result is undefined. Destroy the process group and create a new one")));
}

NcclWork::NcclWork(std::string description, int device, cudaEvent_t end, std::vector<Tensor> tensors,
                   bool blocking_sync, std::shared_ptr<NcclAbortState> abort_state, std::string timeout_hint)
    : Work(std::move(description)),
      device_(device),
      timeout_hint_(std::move(timeout_hint)),
      end_(end),
      blocking_sync_(blocking_sync),
      abort_state_(std::move(abort_state)),
      tensors_(std::move(tensors)) {}

NcclWork::~NcclWork() {
  // Safe while the event is still pending: CUDA releases it once it completes.
  if (end_ != nullptr) cudaEventDestroy(end_);
}

bool NcclWork::poll_gpu() {
  if (gpu_done_.load()) return true;
  cudaError_t e = cudaEventQuery(end_);
  if (e == cudaErrorNotReady) return false;
  std::vector<Tensor> release;
  {
    std::lock_guard<std::mutex> lock(tensors_mutex_);
    if (gpu_done_.load()) return true;
    if (e != cudaSuccess) {
      cudaGetLastError();
      gpu_error_ = std::make_exception_ptr(
          Error(ErrorKind::Distributed, detail::concat(description(), " failed on cuda:", device_, ": ",
                                                       cudaGetErrorString(e), " (", cudaGetErrorName(e), ")")));
    }
    release.swap(tensors_);
    gpu_done_.store(true);
  }
  return true;  // `release` drops the tensors here, outside the lock
}

void NcclWork::complete_from_gpu() {
  // The end event completed. After an abort NCCL's kernels end early, so the data is garbage:
  // report the abort rather than success.
  if (abort_state_->aborted.load()) {
    finish(aborted_error(*abort_state_, description()));
    return;
  }
  std::exception_ptr error;
  {
    std::lock_guard<std::mutex> lock(tensors_mutex_);
    error = gpu_error_;
  }
  finish(error);
}

bool NcclWork::is_completed() {
  if (Work::is_completed()) return true;
  if (!poll_gpu()) return false;
  complete_from_gpu();
  return true;
}

void NcclWork::wait(Millis timeout) {
  timeout = std::min(timeout, kMaxNcclTimeout);
  const auto deadline = Clock::now() + timeout;
  Backoff backoff;
  while (!Work::is_completed()) {
    if (poll_gpu()) {
      complete_from_gpu();
      break;
    }
    if (timeout.count() > 0 && Clock::now() >= deadline) {
      throw Error(ErrorKind::Timeout,
                  detail::concat(description(), " did not complete within ", duration_str(timeout),
                                 " (the wait's timeout); it is still running on cuda:", device_,
                                 ": a peer may be slow, stuck, or calling a different collective"));
    }
    backoff.pause();
  }
  Work::wait();  // done: rethrows the error, if any
}

void NcclWork::synchronize() {
  if (Work::is_completed()) {
    Work::wait();  // rethrows a failure; a success needs no stream wait (the GPU is past the event)
    return;
  }
  if (abort_state_->aborted.load()) {
    // The watchdog fails every pending work right after setting the flag; wait for that verdict.
    wait(Millis(0));
    return;
  }
  if (blocking_sync_) {
    wait(Millis(0));
    return;
  }
  cuda::DeviceGuard guard(device_);
  DDP4J_CUDA_CHECK(cudaStreamWaitEvent(cuda::compute_stream(device_), end_, 0));
}

}  // namespace ddp4j
