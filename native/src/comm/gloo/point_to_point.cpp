// Point-to-point transfers of the Gloo backend (see point_to_point.h).
#include "comm/gloo/point_to_point.h"

#include <gloo/context.h>
#include <gloo/transport/unbound_buffer.h>

#include "comm/gloo/peer_errors.h"

namespace ddp4j {
namespace {

using Clock = std::chrono::steady_clock;

/**
 * What a slot carries. The two headers have one phase per direction, so that crossing transfers
 * never meet; data goes eagerly (its slot encodes everything the two ends must agree on) or,
 * for transfers too large for that, after the headers agreed.
 */
enum class Phase : uint64_t { kCheckedData = 0, kSenderHeader = 1, kReceiverHeader = 2, kEagerData = 3 };

constexpr uint64_t kPrefix = uint64_t{0xd4} << 56;  // a prefix byte Gloo's own collectives do not use (0x01-0x08)

/**
 * Gloo's slot for a header or a checked transfer's data: the phase, the tag and the transfer's
 * number in its (peer, tag) stream. Gloo matches a recv from rank a on slot s with a's send on s,
 * so the pair of ranks need not be part of it.
 */
uint64_t slot(Phase phase, int tag, uint64_t number) {
  return kPrefix | (static_cast<uint64_t>(phase) << 54) | (static_cast<uint64_t>(tag) << 32) | (number & 0xffffffffu);
}

/**
 * The slot of an eager transfer's data: besides tag and number (its low 12 bits; Gloo keeps
 * pending operations of one slot in order), the dtype and the byte count. Two ends that disagree
 * on any of them post different slots, so their data never meets (Gloo would abort the process on
 * a size mismatch); the header swap beside it then reports the disagreement.
 */
uint64_t eager_slot(const Fingerprint& fp, size_t bytes) {
  return kPrefix | (static_cast<uint64_t>(Phase::kEagerData) << 54) | (static_cast<uint64_t>(fp.dtype & 3) << 52) |
         (static_cast<uint64_t>(fp.arg) << 36) | ((fp.seq & 0xfffu) << 24) | static_cast<uint64_t>(bytes);
}

}  // namespace

struct GlooPointToPoint::Transfer {
  std::shared_ptr<Work> work;
  Fingerprint fp;
  Fingerprint theirs;  // the peer's header
  Tensor tensor;
  int peer = -1;
  bool eager = false;  // the data was posted with the headers (eager_slot)
  Clock::time_point deadline;
  std::shared_ptr<gloo::transport::UnboundBuffer> header_out, header_in, data;
  std::exception_ptr post_error;  // Gloo refused to post (e.g. the connection is gone)
  uint64_t record = 0;            // its flight record
};

GlooPointToPoint::GlooPointToPoint(std::shared_ptr<gloo::Context> context, int rank, std::chrono::milliseconds timeout,
                                   FlightRecorder* recorder, std::function<std::string()> broken,
                                   std::function<void(const std::string&)> on_failure,
                                   std::function<Error(const std::string&, const std::string&)> translate)
    : context_(std::move(context)),
      rank_(rank),
      timeout_(timeout),
      recorder_(recorder),
      broken_(std::move(broken)),
      on_failure_(std::move(on_failure)),
      translate_(std::move(translate)) {}

bool GlooPointToPoint::close() {
  std::lock_guard<std::mutex> lock(mutex_);
  closing_ = true;
  bool held = !orphans_.empty();
  for (auto& transfer : active_) {
    held = true;
    for (auto* b : {transfer->header_out.get(), transfer->header_in.get(), transfer->data.get()}) {
      if (b == nullptr) continue;
      b->abortWaitSend();
      b->abortWaitRecv();
    }
  }
  work_cv_.notify_all();
  return held;
}

GlooPointToPoint::~GlooPointToPoint() {
  close();
  std::list<std::thread> threads;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    threads.swap(threads_);  // the workers finish the queued transfers (failing: closed), then exit
  }
  for (auto& t : threads) t.join();
}

std::shared_ptr<Work> GlooPointToPoint::send(const Tensor& tensor, int dst, int tag) {
  return start(Fingerprint::kSend, tensor, dst, tag);
}

std::shared_ptr<Work> GlooPointToPoint::recv(const Tensor& tensor, int src, int tag) {
  return start(Fingerprint::kRecv, tensor, src, tag);
}

std::shared_ptr<Work> GlooPointToPoint::start(Fingerprint::Kind kind, const Tensor& tensor, int peer, int tag) {
  const char* op = kind == Fingerprint::kSend ? "send" : "recv";
  DDP4J_CHECK_ARG(tag >= 0 && tag < kTagLimit, op, ": tag ", tag, " is not in [0, ", kTagLimit,
                  "); use a small non-negative number per kind of message");
  auto x = std::make_shared<Transfer>();
  x->fp.kind = kind;
  x->fp.arg = static_cast<uint32_t>(tag);
  x->fp.dtype = static_cast<uint32_t>(tensor.dtype());
  x->fp.numel = static_cast<uint64_t>(tensor.numel());
  x->fp.peer = static_cast<uint32_t>(peer);
  x->tensor = tensor;
  x->peer = peer;
  x->eager = tensor.nbytes() < kEagerLimitBytes;
  x->deadline = Clock::now() + timeout_;
  const std::string broken = broken_();

  std::lock_guard<std::mutex> lock(mutex_);
  DDP4J_CHECK(!closing_, IllegalState, op, ": the process group is closed");
  auto& streams = kind == Fingerprint::kSend ? sends_ : recvs_;
  x->fp.seq = ++streams[{peer, tag}];  // issue order: the k-th send meets the k-th recv
  const Fingerprint described = x->fp;
  x->work = std::make_shared<Work>(std::function<std::string()>([described] { return describe(described); }),
                                   std::vector<Tensor>{tensor});
  std::shared_ptr<Work> work = x->work;
  // Posted at the call (below): started at once, as far as this rank can tell.
  x->record = recorder_->record(x->fp, FlightTransport::kGloo, /*started=*/true);
  if (!broken.empty()) {
    recorder_->finished(x->record, /*failed=*/true);
    work->finish(std::make_exception_ptr(
        Error(ErrorKind::Distributed, detail::concat(work->description(), " cannot run: this process group failed"
                                                     " earlier (", broken, "); destroy it and create a new one"))));
    return work;
  }
  // Everything is posted here, on the caller's thread: Gloo's network thread moves it from now
  // on, so a transfer never waits for its own thread to start.
  try {
    post(*x);
  } catch (const std::exception&) {
    x->post_error = std::current_exception();
  }
  active_.push_back(x);
  queue_.push_back(x);
  // Every queued transfer has a worker of its own at once: one waiting for a peer must never
  // hold up another (a later transfer may be what that peer waits for).
  if (idle_ >= queue_.size()) {
    work_cv_.notify_one();
  } else {
    join_exited();
    threads_.emplace_back();
    auto self = std::prev(threads_.end());
    *self = std::thread([this, self] { worker_loop(self); });
  }
  return work;
}

void GlooPointToPoint::post(Transfer& x) {
  const bool sending = x.fp.kind == Fingerprint::kSend;
  const int tag = static_cast<int>(x.fp.arg);
  // Both ends send their fingerprint and read the other's at the same time.
  x.header_out = context_->createUnboundBuffer(&x.fp, sizeof(Fingerprint));
  x.header_in = context_->createUnboundBuffer(&x.theirs, sizeof(Fingerprint));
  x.header_out->send(x.peer, slot(sending ? Phase::kSenderHeader : Phase::kReceiverHeader, tag, x.fp.seq), 0,
                     sizeof(Fingerprint));
  x.header_in->recv(x.peer, slot(sending ? Phase::kReceiverHeader : Phase::kSenderHeader, tag, x.fp.seq), 0,
                    sizeof(Fingerprint));
  if (x.eager && x.tensor.nbytes() > 0) post_data(x, eager_slot(x.fp, x.tensor.nbytes()));
}

void GlooPointToPoint::post_data(Transfer& x, uint64_t data_slot) {
  x.data = context_->createUnboundBuffer(x.tensor.raw_data(), x.tensor.nbytes());
  if (x.fp.kind == Fingerprint::kSend) {
    x.data->send(x.peer, data_slot, 0, x.tensor.nbytes());
  } else {
    x.data->recv(x.peer, data_slot, 0, x.tensor.nbytes());
  }
}

void GlooPointToPoint::worker_loop(std::list<std::thread>::iterator self) {
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    if (queue_.empty()) {
      if (closing_) return;
      // Idle workers stay a while, so that a stream of transfers costs no thread start each.
      idle_++;
      const bool woken = work_cv_.wait_for(lock, kIdleExit, [this] { return closing_ || !queue_.empty(); });
      idle_--;
      if (!woken) {
        exited_.push_back(self);  // joined by the next start() or the destructor
        return;
      }
      continue;
    }
    std::shared_ptr<Transfer> x = queue_.front();
    queue_.pop_front();
    lock.unlock();
    run(*x);
    lock.lock();
  }
}

void GlooPointToPoint::join_exited() {
  for (auto it : exited_) {
    it->join();  // returns at once: the thread has only its return left
    threads_.erase(it);
  }
  exited_.clear();
}

Error GlooPointToPoint::closed(const Transfer& transfer) const {
  return Error(ErrorKind::Distributed, detail::concat(transfer.work->description(), " did not finish: rank ", rank_,
                                                      " closed its process group first"));
}

void GlooPointToPoint::wait(gloo::transport::UnboundBuffer& b, bool sending, const Transfer& transfer,
                            Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  if (left.count() < 1) left = std::chrono::milliseconds(1);
  const bool completed = sending ? b.waitSend(left) : b.waitRecv(left);
  if (!completed) throw closed(transfer);  // aborted by the destructor
}

void GlooPointToPoint::run(Transfer& x) {
  const bool sending = x.fp.kind == Fingerprint::kSend;
  const int tag = static_cast<int>(x.fp.arg);
  std::exception_ptr error;
  bool keep_buffers = false;  // Gloo may still hold them (see below)
  try {
    if (x.post_error) std::rethrow_exception(x.post_error);
    wait(*x.header_out, true, x, x.deadline);
    wait(*x.header_in, false, x, x.deadline);
    const bool agree =
        sending ? same_transfer(x.fp, rank_, x.theirs, x.peer) : same_transfer(x.theirs, x.peer, x.fp, rank_);
    if (!agree) {
      // An eager transfer's data stays posted on a slot the peer never uses: Gloo keeps a
      // pointer to its buffer, which therefore lives (with the tensor) until the group closes.
      keep_buffers = x.data != nullptr;
      throw transfer_mismatch_error(x.fp, rank_, x.theirs, x.peer);
    }
    if (x.tensor.nbytes() > 0) {
      if (!x.eager) {
        std::lock_guard<std::mutex> lock(mutex_);
        if (closing_) throw closed(x);
        post_data(x, slot(Phase::kCheckedData, tag, x.fp.seq));
      }
      wait(*x.data, sending, x, x.deadline);
    }
  } catch (const Error&) {
    // The calls disagree (found by both ends; no data moved) or the group closed.
    error = std::current_exception();
  } catch (const std::exception& e) {
    std::unique_lock<std::mutex> lock(mutex_);
    if (closing_) {
      // The group is closing its connections under this transfer: not a network failure.
      error = std::make_exception_ptr(closed(x));
    } else {
      lock.unlock();
      const std::string gloo_message = strip_location(e.what());
      Error translated =
          is_gloo_timeout(gloo_message)
              ? Error(ErrorKind::Timeout,
                      detail::concat(x.work->description(), " timed out after ", duration_str(timeout_), " on rank ",
                                     rank_, ": rank ", x.peer, " did not call the matching ",
                                     sending ? "recv (from rank " : "send (to rank ", rank_, " with tag ", tag,
                                     ") in time [gloo: ", gloo_message, "]"))
              : translate_(x.work->description(), gloo_message);
      error = std::make_exception_ptr(translated);
      // Gloo may still hold this transfer's buffers: the group's connections close, as after a
      // failed collective (so Gloo lets go of them), and the group is unusable from now on.
      on_failure_(translated.what());
    }
  }
  {
    // The buffers go before the Work completes (then the caller may free the tensor), unless Gloo
    // may still hold them: an orphaned eager post, or a group closing under the transfer (its
    // destructor frees them after the connections closed).
    std::lock_guard<std::mutex> lock(mutex_);
    if (keep_buffers || closing_) orphans_.push_back({{x.header_out, x.header_in, x.data}, x.tensor});
  }
  x.header_out.reset();
  x.header_in.reset();
  x.data.reset();
  x.tensor = Tensor();  // not kept until the thread is reaped: the caller may free a large tensor now
  recorder_->finished(x.record, error != nullptr);
  x.work->finish(error);
  std::lock_guard<std::mutex> lock(mutex_);
  active_.remove_if([&x](const std::shared_ptr<Transfer>& t) { return t.get() == &x; });
}

}  // namespace ddp4j
