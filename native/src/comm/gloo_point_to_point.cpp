// Point-to-point transfers of the Gloo backend (see gloo_point_to_point.h).
#include "comm/gloo_point_to_point.h"

#include <gloo/context.h>
#include <gloo/transport/unbound_buffer.h>

#include "comm/peer_errors.h"

namespace ddp4j {
namespace {

using Clock = std::chrono::steady_clock;

/** What a slot carries; each direction of a transfer has its own, so crossing transfers never meet. */
enum class Phase : uint64_t { kSenderHeader = 1, kReceiverHeader = 2, kData = 3 };

/**
 * Gloo's slot for one message of a transfer: a prefix byte Gloo's own collectives do not use
 * (theirs are 0x01-0x08), the phase, the tag and the transfer's number in its (peer, tag) stream.
 * Gloo matches a recv from rank a on slot s with a's send on s, so the pair of ranks need not be
 * part of it.
 */
uint64_t slot(Phase phase, int tag, uint64_t number) {
  return (uint64_t{0xd4} << 56) | (static_cast<uint64_t>(phase) << 52) | (static_cast<uint64_t>(tag) << 32) |
         (number & 0xffffffffu);
}

}  // namespace

struct GlooPointToPoint::Transfer {
  std::shared_ptr<Work> work;
  Fingerprint fp;
  Tensor tensor;
  int peer = -1;
  std::vector<std::shared_ptr<gloo::transport::UnboundBuffer>> buffers;  // under mutex_, for close
  bool finished = false;                                                  // under mutex_
};

GlooPointToPoint::GlooPointToPoint(std::shared_ptr<gloo::Context> context, int rank, std::chrono::milliseconds timeout,
                                   std::function<std::string()> broken,
                                   std::function<void(const std::string&)> on_failure,
                                   std::function<Error(const std::string&, const std::string&)> translate)
    : context_(std::move(context)),
      rank_(rank),
      timeout_(timeout),
      broken_(std::move(broken)),
      on_failure_(std::move(on_failure)),
      translate_(std::move(translate)) {}

bool GlooPointToPoint::close() {
  std::lock_guard<std::mutex> lock(mutex_);
  closing_ = true;
  bool unfinished = false;
  for (auto& [transfer, thread] : running_) {
    unfinished = unfinished || !transfer->finished;
    for (auto& b : transfer->buffers) {
      b->abortWaitSend();
      b->abortWaitRecv();
    }
  }
  return unfinished;
}

GlooPointToPoint::~GlooPointToPoint() {
  close();
  std::list<std::pair<std::shared_ptr<Transfer>, std::thread>> running;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    running.swap(running_);
  }
  for (auto& entry : running) entry.second.join();
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
  auto transfer = std::make_shared<Transfer>();
  transfer->fp.kind = kind;
  transfer->fp.arg = static_cast<uint32_t>(tag);
  transfer->fp.dtype = static_cast<uint32_t>(tensor.dtype());
  transfer->fp.numel = static_cast<uint64_t>(tensor.numel());
  transfer->fp.peer = static_cast<uint32_t>(peer);
  transfer->tensor = tensor;
  transfer->peer = peer;
  std::lock_guard<std::mutex> lock(mutex_);
  DDP4J_CHECK(!closing_, IllegalState, op, ": the process group is closed");
  reap_finished();
  auto& streams = kind == Fingerprint::kSend ? sends_ : recvs_;
  transfer->fp.seq = ++streams[{peer, tag}];  // issue order: the k-th send meets the k-th recv
  const Fingerprint described = transfer->fp;
  transfer->work = std::make_shared<Work>(std::function<std::string()>([described] { return describe(described); }),
                                          std::vector<Tensor>{tensor});
  std::shared_ptr<Work> work = transfer->work;
  running_.emplace_back(transfer, std::thread([this, transfer] { run(*transfer); }));
  return work;
}

void GlooPointToPoint::reap_finished() {
  for (auto it = running_.begin(); it != running_.end();) {
    if (it->first->finished) {
      it->second.join();  // returns at once: the thread has only its return left
      it = running_.erase(it);
    } else {
      ++it;
    }
  }
}

std::shared_ptr<gloo::transport::UnboundBuffer> GlooPointToPoint::buffer(Transfer& transfer, void* ptr, size_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (closing_) return nullptr;
  std::shared_ptr<gloo::transport::UnboundBuffer> b = context_->createUnboundBuffer(ptr, bytes);
  transfer.buffers.push_back(b);
  return b;
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
  try {
    const std::string broken = broken_();
    if (!broken.empty()) {
      throw Error(ErrorKind::Distributed,
                  detail::concat(x.work->description(), " cannot run: this process group failed earlier (", broken,
                                 "); destroy it and create a new one"));
    }
    const Clock::time_point deadline = Clock::now() + timeout_;
    // Both ends send their fingerprint and read the other's at the same time: one message latency.
    Fingerprint theirs;
    auto out = buffer(x, &x.fp, sizeof(Fingerprint));
    auto in = buffer(x, &theirs, sizeof(Fingerprint));
    if (!out || !in) throw closed(x);
    out->send(x.peer, slot(sending ? Phase::kSenderHeader : Phase::kReceiverHeader, tag, x.fp.seq), 0,
              sizeof(Fingerprint));
    in->recv(x.peer, slot(sending ? Phase::kReceiverHeader : Phase::kSenderHeader, tag, x.fp.seq), 0,
             sizeof(Fingerprint));
    wait(*out, true, x, deadline);
    wait(*in, false, x, deadline);
    const bool agree =
        sending ? same_transfer(x.fp, rank_, theirs, x.peer) : same_transfer(theirs, x.peer, x.fp, rank_);
    if (!agree) throw Error(ErrorKind::Distributed, transfer_mismatch_message(x.fp, rank_, theirs, x.peer));
    if (x.tensor.nbytes() > 0) {
      auto data = buffer(x, x.tensor.raw_data(), x.tensor.nbytes());
      if (!data) throw closed(x);
      if (sending) {
        data->send(x.peer, slot(Phase::kData, tag, x.fp.seq), 0, x.tensor.nbytes());
      } else {
        data->recv(x.peer, slot(Phase::kData, tag, x.fp.seq), 0, x.tensor.nbytes());
      }
      wait(*data, sending, x, deadline);
    }
  } catch (const Error&) {
    // The calls disagree (both ends found it before any data moved) or the group closed.
    error = std::current_exception();
  } catch (const std::exception& e) {
    bool closing;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      closing = closing_;
    }
    if (closing) {
      // The group is closing its connections under this transfer: not a network failure.
      x.work->finish(std::make_exception_ptr(closed(x)));
      std::lock_guard<std::mutex> lock(mutex_);
      x.finished = true;
      return;
    }
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
    // failed collective, and the group is unusable from now on.
    on_failure_(translated.what());
  }
  // The buffers go before the Work completes (then the caller may free the tensor), unless the
  // group is closing: Gloo may still hold them until it has closed the connections, so they stay,
  // with the tensor, until the destructor.
  std::vector<std::shared_ptr<gloo::transport::UnboundBuffer>> buffers;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!closing_) buffers.swap(x.buffers);
  }
  buffers.clear();
  x.work->finish(error);
  std::lock_guard<std::mutex> lock(mutex_);
  x.finished = true;
}

}  // namespace ddp4j
