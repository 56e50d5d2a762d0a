// The Gloo group's queue and worker thread: ops run one at a time in issue order, on the worker
// or inline on the caller's thread when the queue is idle, each finishing its Work.
#include "comm/gloo/peer_errors.h"
#include "comm/gloo/peer_loss.h"
#include "comm/gloo/process_group.h"
#include "comm/local/local_collectives.h"

namespace ddp4j {

std::shared_ptr<Work> ProcessGroupGloo::enqueue(const Fingerprint& fp, std::vector<Tensor> keep_alive,
                                                std::function<void(uint32_t, const Fingerprint&)> run, Check check,
                                                bool run_inline) {
  if (check == Check::kBefore && !options_.check_collectives) check = Check::kNone;
  Op op{nullptr, fp, std::move(run), check};
  {
    std::lock_guard<std::mutex> lock(mutex_);
    DDP4J_CHECK(!stopping_, IllegalState, describe(fp), ": the process group is closed");
    // Numbered in issue order, which is run order: every rank numbers its collectives alike.
    op.fp.seq = ++seq_;
    const Fingerprint described = op.fp;
    op.work = std::make_shared<Work>(std::function<std::string()>([described] { return describe(described); }),
                                     std::move(keep_alive));
    if (!run_inline || running_ || !queue_.empty()) {
      run_inline = false;
      op.record = recorder_.record(op.fp, flight_transport_, /*started=*/false);
      queue_.push_back(op);
    } else {
      running_ = true;  // keeps the worker off until this op is done, so ops stay in issue order
      op.inline_op = true;
      op.record = recorder_.record(op.fp, flight_transport_, /*started=*/true);
    }
  }
  std::shared_ptr<Work> work = op.work;
  if (!run_inline) {
    cv_.notify_one();
    return work;
  }
  run_op(op);
  bool queued_meanwhile;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    running_ = false;
    queued_meanwhile = !queue_.empty();
  }
  // Wake the worker only for ops other threads queued meanwhile: a needless wake-up costs a
  // system call and, on a busy machine, a context switch per microsecond collective.
  if (queued_meanwhile) cv_.notify_one();
  return work;
}

void ProcessGroupGloo::worker_loop() {
  while (true) {
    Op op;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      cv_.wait(lock, [this] { return stopping_ || (!queue_.empty() && !running_); });
      if (queue_.empty()) return;  // stopping
      op = std::move(queue_.front());
      queue_.pop_front();
      running_ = true;
    }
    run_op(op);
    std::lock_guard<std::mutex> lock(mutex_);
    running_ = false;
  }
}

void ProcessGroupGloo::run_op(Op& op) {
  const uint64_t seq = op.fp.seq;
  // Distinct tags per op keep a fast rank's next collective apart from a slow rank's current one.
  const uint32_t header_tag = static_cast<uint32_t>(seq * 2);
  const uint32_t data_tag = header_tag + 1;
  std::exception_ptr error;
  if (!op.inline_op) recorder_.started(op.record);
  const std::string failed = broken();
  if (!failed.empty()) {
    if (local_ && !local_aborted_) {
      // A failed transfer broke the group from another thread: release this host's other ranks.
      abort_local(detail::concat("rank ", rank(), "'s process group failed: ", failed));
    }
    error = std::make_exception_ptr(Error(
        ErrorKind::Distributed,
        detail::concat(op.work->description(), " cannot run: this process group failed earlier (", failed,
                       "); destroy it and create a new one (Distributed.destroyProcessGroup, then initProcessGroup)")));
  } else {
    try {
      if (op.check == Check::kBefore || (op.fp.kind == Fingerprint::kBarrier && !op.run)) {
        exchange_headers(op, header_tag);
      }
      if (op.run) op.run(data_tag, op.fp);
    } catch (const Error& e) {
      // A disagreement between ranks, found before any data moved (every rank finds it in the
      // same exchange): the connections are intact.
      error = std::current_exception();
      if (local_ && local_->broken()) {
        // The shared-memory transport fails for good (its peers see the segment aborted); the
        // other hosts' ranks must not wait for this one until their timeout either.
        set_broken(e.what());
        // A rank of this host died: record it before the leaders' connections close, so that the
        // other hosts' leaders name it rather than this rank (peer_loss.h).
        if (local_->dead_rank() >= 0) {
          set_lost(local_->dead_rank(), local_->dead_pid());
          if (loss_) loss_->record(DeadRank{local_->dead_rank(), std::to_string(local_->dead_pid())});
        }
        close_connections();
      }
    } catch (const std::exception& e) {
      Error translated = gloo_failure(op.work->description(), strip_location(e.what()), op.fp.seq);
      set_broken(translated.what());
      error = std::make_exception_ptr(translated);
      // Gloo leaves the other connections open; close them so that peers blocked on this rank
      // fail now instead of at their timeout (Gloo does the same itself after a timeout).
      close_connections();
    }
  }
  recorder_.finished(op.record, error != nullptr);
  op.work->finish(error);
}

}  // namespace ddp4j
