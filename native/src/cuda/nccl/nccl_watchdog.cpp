// The NCCL group's watchdog and abort: a thread per group that completes works as their end
// events complete, and aborts the communicator on an asynchronous NCCL error or a timeout.
#include <cstdio>

#include "cuda/nccl/nccl_process_group.h"

namespace ddp4j {

using Clock = std::chrono::steady_clock;
using Millis = std::chrono::milliseconds;
using nccl_detail::aborted_error;

void ProcessGroupNccl::abort(ErrorKind kind, const std::string& reason) { abort_impl(kind, reason, nullptr); }

void ProcessGroupNccl::abort_impl(ErrorKind kind, const std::string& reason, const NcclWork* culprit) {
  {
    std::lock_guard<std::mutex> lock(abort_state_->mutex);
    if (abort_state_->aborted.load()) return;  // the first reason wins
    abort_state_->reason = reason;
    abort_state_->aborted.store(true);
  }
  abort_requested_.store(true);  // an enqueue polling under comm_mutex_ gives up now
  {
    std::lock_guard<std::mutex> lock(comm_mutex_);
    if (comm_ != nullptr) {
      // Stops NCCL's kernels and proxy threads, so the pending end events complete.
      api_.comm_abort(comm_);
      comm_ = nullptr;
    }
  }
  std::fprintf(stderr, "[ddp4j] NCCL process group (%s) aborted: %s\n", where().c_str(), reason.c_str());
  fail_pending(kind, reason, culprit);
}

void ProcessGroupNccl::fail_pending(ErrorKind kind, const std::string& reason, const NcclWork* culprit) {
  std::deque<Pending> failed;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    failed.swap(pending_);
  }
  for (auto& p : failed) {
    recorder_.finished(p.record, /*failed=*/true);
    if (p.work.get() == culprit) {
      p.work->finish(std::make_exception_ptr(Error(kind, reason)));
    } else {
      p.work->finish(std::make_exception_ptr(
          Error(ErrorKind::Distributed, detail::concat(p.work->description(),
                                                       " did not complete: the NCCL communicator was aborted (",
                                                       reason, ")"))));
    }
    if (!p.work->poll_gpu()) {
      std::lock_guard<std::mutex> lock(mutex_);
      draining_.push_back(p.work);
    }
  }
  cv_.notify_all();
}

void ProcessGroupNccl::watchdog_loop() {
  // This thread's NCCL calls (ncclCommGetAsyncError, ncclCommAbort) run with the group's device current.
  cudaSetDevice(device_);
  while (true) {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      const Millis interval = pending_.empty() && draining_.empty() ? Millis(100) : options_.watchdog_interval;
      cv_.wait_for(lock, interval, [this] { return stopping_; });
      if (stopping_) return;
    }
    Clock::time_point oldest_enqueued;
    const std::shared_ptr<NcclWork> oldest = complete_finished_works(&oldest_enqueued);
    if (abort_state_->aborted.load()) continue;
    if (abort_on_async_error(oldest.get())) continue;
    abort_on_timeout(oldest, oldest_enqueued);
  }
}

std::shared_ptr<NcclWork> ProcessGroupNccl::complete_finished_works(Clock::time_point* oldest_enqueued) {
  // 1. Completions, in issue order (later works on the same stream cannot finish first, but
  //    every one is checked, which is cheap).
  std::vector<std::shared_ptr<NcclWork>> done;
  std::vector<uint64_t> done_records;
  std::shared_ptr<NcclWork> oldest;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto it = pending_.begin(); it != pending_.end();) {
      if (it->work->poll_gpu()) {
        done.push_back(it->work);
        done_records.push_back(it->record);
        it = pending_.erase(it);
      } else {
        if (!oldest) {
          oldest = it->work;
          *oldest_enqueued = it->enqueued;
        }
        ++it;
      }
    }
    for (auto it = draining_.begin(); it != draining_.end();) {
      it = (*it)->poll_gpu() ? draining_.erase(it) : it + 1;
    }
  }
  for (size_t i = 0; i < done.size(); i++) {
    const bool aborted = abort_state_->aborted.load();
    recorder_.finished(done_records[i], aborted);
    if (aborted) {
      done[i]->finish(aborted_error(*abort_state_, done[i]->description()));
    } else {
      done[i]->finish(nullptr);
    }
  }
  if (!done.empty()) cv_.notify_all();  // the destructor waits for pending_ to drain
  return oldest;
}

bool ProcessGroupNccl::abort_on_async_error(const NcclWork* oldest) {
  // 2. Asynchronous NCCL errors (a peer died, a network failure). Skipped while an enqueue
  //    holds the communicator: the next round checks.
  nccl::Result async = nccl::kSuccess;
  bool checked = false;
  {
    std::unique_lock<std::mutex> lock(comm_mutex_, std::try_to_lock);
    if (lock.owns_lock() && comm_ != nullptr) {
      checked = api_.comm_get_async_error(comm_, &async) == nccl::kSuccess;
    }
  }
  if (!checked || async == nccl::kSuccess || async == nccl::kInProgress) return false;
  std::string text;
  {
    std::lock_guard<std::mutex> lock(comm_mutex_);
    text = nccl_error(async);
  }
  abort(ErrorKind::Distributed,
        detail::concat("NCCL reported an asynchronous error on ", where(), ": ", text,
                       oldest ? detail::concat(" while running ", oldest->description()) : std::string(),
                       " (a peer may have died or the network failed)"));
  return true;
}

void ProcessGroupNccl::abort_on_timeout(const std::shared_ptr<NcclWork>& oldest, Clock::time_point enqueued) {
  // 3. Timeouts: the oldest pending work is the first to exceed it.
  if (!oldest || Clock::now() - enqueued <= options_.timeout) return;
  const std::string reason = detail::concat(
      oldest->description(), " timed out after ", duration_str(options_.timeout),
      ": not every rank took part in time (a rank may be stuck, slower than the timeout, or calling a "
      "different collective; raise the timeout of initProcessGroup or DDP4J_TIMEOUT_SECONDS if the work is "
      "just slow). The communicator was aborted",
      oldest->timeout_hint());
  // The timed-out work fails with Timeout, the others with Distributed.
  abort_impl(ErrorKind::Timeout, reason, oldest.get());
}

}  // namespace ddp4j
