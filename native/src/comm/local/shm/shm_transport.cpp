// The shared-memory collectives (see shm_transport.h).
//
// Segment layout (after ShmSegment's own header page):
//   abort area (4 KiB): who failed first and why, so peers stop waiting at once
//   one 256-byte line per rank: its phase counter (the futex word), its sleepers count, and the
//     descriptors of the op it last put in each of its two slots
//   2 slots per rank, chunk_bytes each: double-buffered data
//
// Synchronisation: every rank posts the same sequence of phases (its counter only grows) and
// waits for peers' counters to reach a phase. A slot alternates between steps; a rank rewrites
// its slot s only once every peer has posted the phase after the step that last read it
// (slot_free_), which they have almost always done already, so the check costs one read per peer.
#include "comm/local/shm/shm_transport.h"

#include <immintrin.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <utility>

#include "comm/local/shm/shm_reduce.h"
#include "ddp4j/errors.h"

namespace ddp4j::shm {
namespace {

using Clock = std::chrono::steady_clock;
constexpr size_t kAbortBytes = 4096;
constexpr size_t kLineBytes = 256;  // whole cache-line pairs: adjacent-line prefetch must not couple ranks
constexpr uint32_t kAllReduce = 1, kBroadcast = 2, kAllGather = 3, kBarrier = 4, kReduce = 5, kReduceScatter = 6;

/** The op a rank put into one of its slots; peers compare it with their own. */
struct Desc {
  uint64_t step;
  uint64_t count;
  uint32_t kind;
  uint32_t arg;
  Fingerprint caller;  // the process group's description of the call; kind kNone when it gave none
};

inline bool reached(uint32_t value, uint32_t target) { return static_cast<int32_t>(value - target) >= 0; }

size_t round_up(size_t v, size_t m) { return (v + m - 1) / m * m; }

/** The reductions' element types: all but bool (bfloat16 and float16 reduce in float32, see shm_reduce.h). */
bool reducible(DType d) { return static_cast<int>(d) >= 0 && static_cast<int>(d) < kNumDTypes && d != DType::Bool; }

}  // namespace

struct alignas(kLineBytes) ShmTransport::Line {
  std::atomic<uint32_t> seq;       // phases posted by the owner (futex word)
  std::atomic<uint32_t> sleepers;  // peers asleep on seq: the owner wakes them only if non-zero
  Desc desc[2];
};

struct ShmTransport::AbortArea {
  std::atomic<uint32_t> state;  // 0 fine, 1 being written, 2 written, 3 local_rank's process exited (no message)
  int32_t local_rank;
  int32_t killed;  // 1 + the local rank whose death the writer saw, or 0 (the segment starts zeroed)
  int32_t killed_elsewhere;  // 1 + the group rank on another host whose death the writer (a leader) learned of, or 0
  int64_t killed_elsewhere_pid;  // its pid, or 0 when unknown
  int32_t error_kind;  // the writer's ErrorKind: a peer that quotes its message keeps its kind (a mismatch)
  char message[1024];
};

struct ShmTransport::Op {
  uint32_t kind;
  uint32_t arg;    // allReduce: dtype << 8 | op; reduce: that | root << 16; broadcast: root
  uint64_t count;  // allReduce: elements; broadcast / allGather: bytes
  Clock::time_point deadline;
  const Fingerprint* caller = nullptr;  // the caller's fingerprint, compared with the peers' (may be null)
};

size_t shm_segment_bytes(int local_size, size_t chunk_bytes) {
  return kAbortBytes + round_up(static_cast<size_t>(local_size) * kLineBytes, 4096) +
         static_cast<size_t>(local_size) * 2 * round_up(chunk_bytes, 64);
}

namespace {
ShmOptions checked(ShmOptions o, int local_rank, int local_size, const std::vector<int>& global_ranks) {
  DDP4J_CHECK_ARG(local_size >= 1 && local_rank >= 0 && local_rank < local_size, "shared memory: local rank ",
                  local_rank, " of ", local_size);
  DDP4J_CHECK_ARG(global_ranks.size() == static_cast<size_t>(local_size), "shared memory: ", global_ranks.size(),
                  " global ranks given for ", local_size, " local ranks");
  DDP4J_CHECK_ARG(o.chunk_bytes >= 4096, "shared memory: chunk_bytes ", o.chunk_bytes, " is below 4096");
  DDP4J_CHECK_ARG(o.timeout.count() > 0, "shared memory: the timeout must be positive");
  o.chunk_bytes = round_up(o.chunk_bytes, 64);
  if (o.sleep_slice.count() <= 0) o.sleep_slice = std::chrono::milliseconds(1);
  return o;
}
}  // namespace

ShmTransport::ShmTransport(gloo::rendezvous::Store& store, const std::string& prefix, int local_rank, int local_size,
                           std::vector<int> global_ranks, ShmOptions options)
    : local_rank_(local_rank),
      local_size_(local_size),
      global_ranks_(std::move(global_ranks)),
      options_(checked(options, local_rank, local_size, global_ranks_)),
      chunk_bytes_(options_.chunk_bytes),
      segment_(store, prefix, local_rank, local_size, shm_segment_bytes(local_size, options_.chunk_bytes),
               options_.timeout) {
  static_assert(sizeof(Line) == kLineBytes, "one line per rank");
  static_assert(sizeof(AbortArea) <= kAbortBytes, "abort area");
  char* base = static_cast<char*>(segment_.data());
  abort_ = reinterpret_cast<AbortArea*>(base);
  lines_ = reinterpret_cast<Line*>(base + kAbortBytes);
  slots_ = base + kAbortBytes + round_up(static_cast<size_t>(local_size) * kLineBytes, 4096);
  pids_.resize(local_size);
  std::vector<pid_t> watched(local_size, -1);
  for (int r = 0; r < local_size; r++) {
    pids_[r] = segment_.pid(r);
    if (r != local_rank) watched[r] = pids_[r];
  }
  peers_ = PeerWatch(watched);
  register_for_exit();
}

namespace {
/**
 * The transports of this process that are open, for the exit handler. Never destroyed: exit()
 * runs the handler while static objects are being torn down.
 */
struct OpenTransports {
  std::mutex mutex;
  std::vector<ShmTransport*> all;
};

OpenTransports& open_transports() {
  static auto* open = new OpenTransports;
  return *open;
}
}  // namespace

void ShmTransport::on_process_exit() {
  OpenTransports& open = open_transports();
  std::lock_guard<std::mutex> lock(open.mutex);
  for (ShmTransport* t : open.all) t->mark_exited();
}

void ShmTransport::mark_exited() {
  // Only the abort area and the futex words: another thread may still be inside a call.
  uint32_t expected = 0;
  if (abort_->state.compare_exchange_strong(expected, 1, std::memory_order_acq_rel)) {
    abort_->local_rank = local_rank_;
    abort_->message[0] = '\0';
    abort_->state.store(3, std::memory_order_release);
  }
  for (int r = 0; r < local_size_; r++) futex_wake_all(&lines_[r].seq);
}

void ShmTransport::register_for_exit() {
  // exit() (System.exit, main returning, SIGTERM) runs atexit handlers; kill -9 and crashes do
  // not. So peers can tell a rank that ended its program without closing its group (often one
  // that ran out of data: uneven inputs) from one that was killed or crashed.
  static std::once_flag registered;
  std::call_once(registered, [] { std::atexit(&ShmTransport::on_process_exit); });
  OpenTransports& open = open_transports();
  std::lock_guard<std::mutex> lock(open.mutex);
  open.all.push_back(this);
}

ShmTransport::~ShmTransport() {
  OpenTransports& open = open_transports();
  std::lock_guard<std::mutex> lock(open.mutex);
  open.all.erase(std::remove(open.all.begin(), open.all.end(), this), open.all.end());
}

char* ShmTransport::slot_data(int rank, int slot) const {
  return slots_ + (static_cast<size_t>(rank) * 2 + slot) * chunk_bytes_;
}

std::string ShmTransport::who(int local) const {
  return detail::concat("rank ", global_ranks_[local], " (pid ", pids_[local], ")");
}

std::string ShmTransport::describe(const Op& op) const {
  switch (op.kind) {
    case kAllReduce:
      return detail::concat("allReduce(", reduce_op_name(static_cast<ReduceOp>(op.arg & 0xff)), ") of ", op.count, " ",
                            dtype_name(static_cast<DType>(op.arg >> 8)), " elements");
    case kReduce:
      return detail::concat("reduce(", reduce_op_name(static_cast<ReduceOp>(op.arg & 0xff)), ") of ", op.count, " ",
                            dtype_name(static_cast<DType>((op.arg >> 8) & 0xff)), " elements to rank ",
                            global_ranks_[op.arg >> 16]);
    case kBroadcast:
      return detail::concat("broadcast of ", op.count, " bytes from rank ", global_ranks_[op.arg]);
    case kAllGather: return detail::concat("allGather of ", op.count, " bytes per rank");
    case kReduceScatter:
      return detail::concat("reduceScatter(", reduce_op_name(static_cast<ReduceOp>(op.arg & 0xff)), ") of ", op.count,
                            " ", dtype_name(static_cast<DType>(op.arg >> 8)), " elements per rank");
    default: return "barrier";
  }
}

void ShmTransport::check_usable(const Op& op) const {
  DDP4J_CHECK(broken_.empty(), Distributed, "shared-memory transport unusable after an earlier failure (",
              broken_, "); ", describe(op), " not started");
}

ErrorFacts ShmTransport::facts_of(const Op& op) const {
  ErrorFacts facts;
  const bool described = op.caller != nullptr && op.caller->present();
  facts.op = described ? ddp4j::describe(*op.caller) : describe(op);
  facts.transport = "shared memory";
  facts.rank = global_ranks_[local_rank_];
  if (described) {
    facts.seq = op.caller->seq;
    facts.mine = call_facts(*op.caller);
  }
  return facts;
}

Error ShmTransport::peer_lost(const Op& op, int local, PeerLoss loss, const std::string& message) const {
  ErrorFacts facts = facts_of(op);
  facts.peer = global_ranks_[local];
  facts.peer_pid = pids_[local];
  facts.loss = loss;
  return Error(ErrorKind::PeerLost, message, std::move(facts));
}

void ShmTransport::fail(const Error& e) {
  // The peers that quote this failure keep a mismatch's kind (theirs is the same disagreement);
  // anything else is this rank's failure, not a loss of this rank (the PeerLost kind means that).
  mark_aborted(e.what(), -1, -1, 0, e.kind() == ErrorKind::Mismatch ? ErrorKind::Mismatch : ErrorKind::Distributed);
  throw e;
}

void ShmTransport::saw_death(int local) {
  if (local < 0 || local >= local_size_) return;  // read from the segment: checked
  dead_rank_ = global_ranks_[local];
  dead_pid_ = pids_[local];
}

void ShmTransport::fail_died(int dead, const Op& op) {
  saw_death(dead);
  Error e = died_during(dead, op);
  mark_aborted(e.what(), dead);  // the peers read the death from `dead`, and name it themselves
  throw e;
}

void ShmTransport::abort(const std::string& reason, ErrorKind kind) {
  if (broken_.empty()) mark_aborted(reason, -1, -1, 0, kind);
}

void ShmTransport::abort_for_death(const std::string& reason, int dead_rank, pid_t dead_pid) {
  if (!broken_.empty()) return;
  const auto local = std::find(global_ranks_.begin(), global_ranks_.end(), dead_rank);
  if (local != global_ranks_.end()) {  // one of this host's ranks: as if this rank had seen it here
    saw_death(static_cast<int>(local - global_ranks_.begin()));
    mark_aborted(reason, static_cast<int>(local - global_ranks_.begin()));
    return;
  }
  dead_rank_ = dead_rank;
  dead_pid_ = dead_pid;
  mark_aborted(reason, -1, dead_rank, dead_pid);
}

void ShmTransport::mark_aborted(const std::string& message, int dead, int elsewhere_rank, pid_t elsewhere_pid,
                                ErrorKind kind) {
  broken_ = message;
  // First failure of the group wins the abort area; peers waiting anywhere stop at once.
  uint32_t expected = 0;
  if (abort_->state.compare_exchange_strong(expected, 1, std::memory_order_acq_rel)) {
    abort_->local_rank = local_rank_;
    abort_->killed = dead + 1;
    abort_->killed_elsewhere = elsewhere_rank + 1;
    abort_->killed_elsewhere_pid = elsewhere_pid;
    abort_->error_kind = static_cast<int32_t>(kind);
    std::snprintf(abort_->message, sizeof(abort_->message), "%s", message.c_str());
    abort_->state.store(2, std::memory_order_release);
  }
  for (int r = 0; r < local_size_; r++) futex_wake_all(&lines_[r].seq);
}

void ShmTransport::post() {
  posted_++;
  Line& me = lines_[local_rank_];
  // seq_cst store then seq_cst load, against the waiter's sleepers increment then seq load: either
  // we see its increment and wake it, or it sees our value and does not sleep.
  me.seq.store(posted_, std::memory_order_seq_cst);
  if (me.sleepers.load(std::memory_order_seq_cst) != 0) futex_wake_all(&me.seq);
}

Error ShmTransport::abandoned(const Op& op) {
  // The rank that wins the abort area publishes its fields a few instructions after its claim
  // (state 1, then 2 or 3): give it a bounded moment, so this rank names what that one saw.
  uint32_t state = abort_->state.load(std::memory_order_acquire);
  for (const auto until = Clock::now() + std::chrono::milliseconds(200); state == 1 && Clock::now() < until;) {
    sched_yield();
    state = abort_->state.load(std::memory_order_acquire);  // before the fields it publishes
  }
  const int r = abort_->local_rank;
  const bool named = r >= 0 && r < local_size_;
  if (state == 3 && named) {
    return peer_lost(op, r, PeerLoss::Exited,
                     detail::concat("shared memory: ", describe(op), " abandoned: ", who(r),
                                    " exited without closing its process group (its program ended: main returned,"
                                    " System.exit, or a SIGTERM)"));
  }
  // A killed rank marks nothing: the survivor that noticed first aborted the group, and the others
  // learn of it here. Each names the dead rank itself, so every rank's log says what happened.
  if (state == 2 && abort_->killed > 0 && abort_->killed <= local_size_) {
    saw_death(abort_->killed - 1);
    return died_during(abort_->killed - 1, op);
  }
  if (state == 2 && abort_->killed_elsewhere > 0 && named) {
    dead_rank_ = abort_->killed_elsewhere - 1;
    dead_pid_ = static_cast<pid_t>(abort_->killed_elsewhere_pid);
    return died_elsewhere(r, op);
  }
  if (state != 2) {
    const int dead = peers_.first_dead();
    if (dead >= 0) {
      saw_death(dead);
      return died_during(dead, op);
    }
  }
  if (state == 2 && named && abort_->error_kind == static_cast<int32_t>(ErrorKind::PeerLost)) {
    // The peer closed its group (or exited with it closed): gone cleanly, as an exit.
    return peer_lost(op, r, PeerLoss::Exited,
                     detail::concat("shared memory: ", describe(op), " abandoned: ", who(r), " left: ",
                                    std::string(abort_->message)));
  }
  ErrorFacts facts = facts_of(op);
  if (named) facts.peer = global_ranks_[r];
  // A peer's mismatch stays a mismatch here: this rank's call met the same disagreement.
  const ErrorKind kind = state == 2 && abort_->error_kind == static_cast<int32_t>(ErrorKind::Mismatch)
                             ? ErrorKind::Mismatch
                             : ErrorKind::Distributed;
  return Error(kind,
               detail::concat("shared memory: ", describe(op), " abandoned: ",
                              state == 2 && named ? who(r) + " failed: " + std::string(abort_->message) : "a peer failed"),
               std::move(facts));
}

Error ShmTransport::died_during(int dead, const Op& op) const {
  return peer_lost(op, dead, PeerLoss::Killed,
                   detail::concat(who(dead), " died during ",
                                  op.caller != nullptr && op.caller->present() ? ddp4j::describe(*op.caller) : describe(op),
                                  " (shared memory): its process ", kPeerKilled,
                                  " (killed, e.g. by kill -9 or the out-of-memory killer, or crashed); its own output, or"
                                  " the launcher's, says why"));
}

Error ShmTransport::died_elsewhere(int via, const Op& op) const {
  const std::string dead = dead_pid_ > 0 ? detail::concat("rank ", dead_rank_, " (pid ", dead_pid_, ")")
                                         : detail::concat("rank ", dead_rank_);
  ErrorFacts facts = facts_of(op);
  facts.peer = dead_rank_;
  facts.peer_pid = dead_pid_;
  facts.loss = PeerLoss::Killed;
  return Error(ErrorKind::PeerLost,
               detail::concat(dead, " died during ",
                              op.caller != nullptr && op.caller->present() ? ddp4j::describe(*op.caller) : describe(op),
                              " (on another host; seen from rank ", global_ranks_[local_rank_], " through ", who(via),
                              " of this host, whose Gloo step failed on it): its process ", kPeerKilled,
                              " (killed, e.g. by kill -9 or the out-of-memory killer, or crashed); its own output, or the"
                              " launcher's, says why"),
               std::move(facts));
}

void ShmTransport::wait_peer(int peer, uint32_t target, const Op& op) {
  Line& l = lines_[peer];
  if (reached(l.seq.load(std::memory_order_acquire), target)) return;
  // Spin first: a peer already inside the collective answers within a microsecond or two. After
  // the first few microseconds, yield between checks: when ranks outnumber free cores, the peer
  // may be waiting for this very core, and a yield lets it run without a futex sleep and wake-up.
  const auto t0 = Clock::now();
  const auto yield_from = t0 + std::chrono::microseconds(std::min(options_.spin_us, 4));
  const auto spin_end = t0 + std::chrono::microseconds(options_.spin_us);
  for (int i = 1;; i++) {
    _mm_pause();
    if (reached(l.seq.load(std::memory_order_acquire), target)) return;
    if ((i & 15) == 0) {
      const auto now = Clock::now();
      if (now >= spin_end) break;
      if (now >= yield_from) sched_yield();
    }
  }
  for (;;) {
    // What we wait for first: a peer that posted, then aborted (it closed its group) or exited, has
    // still done its part of this step.
    if (reached(l.seq.load(std::memory_order_acquire), target)) return;
    if (abort_->state.load(std::memory_order_acquire) != 0) {
      // Read the peer's counter again: the acquire above makes visible everything the aborting rank
      // did before it aborted, so a peer that posted this step and then closed its group (the last
      // barrier before destroyProcessGroup) has done its part; the first read may predate its post.
      if (reached(l.seq.load(std::memory_order_acquire), target)) return;
      fail(abandoned(op));
    }
    const int dead = peers_.first_dead();
    if (dead >= 0 && !reached(l.seq.load(std::memory_order_acquire), target)) {
      // A peer that exited marked the segment before it went: read the mark after seeing it gone.
      if (abort_->state.load(std::memory_order_acquire) != 0) fail(abandoned(op));
      fail_died(dead, op);
    }
    const auto now = Clock::now();
    if (now >= op.deadline) {
      ErrorFacts facts = facts_of(op);
      facts.peer = global_ranks_[peer];
      facts.peer_pid = pids_[peer];
      facts.timeout_ms = options_.timeout.count();
      // The caller's words carry the collective's #seq and DDP bucket, as Gloo's timeouts do.
      const std::string what = facts.op;
      fail(Error(ErrorKind::Timeout,
                 detail::concat("shared memory: ", what, " timed out after ", duration_str(options_.timeout),
                                " on rank ", facts.rank, " waiting for ", who(peer)),
                 std::move(facts)));
    }
    const int64_t left_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(op.deadline - now).count();
    const int64_t slice_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(options_.sleep_slice).count();
    l.sleepers.fetch_add(1, std::memory_order_seq_cst);
    const uint32_t v = l.seq.load(std::memory_order_seq_cst);
    if (!reached(v, target)) futex_wait(&l.seq, v, std::max<int64_t>(1000, std::min(left_ns, slice_ns)));
    l.sleepers.fetch_sub(1, std::memory_order_seq_cst);
    if (reached(l.seq.load(std::memory_order_acquire), target)) return;
  }
}

void ShmTransport::wait_all(uint32_t target, const Op& op) {
  for (int r = 0; r < local_size_; r++) {
    if (r != local_rank_) wait_peer(r, target, op);
  }
}

void ShmTransport::begin_step(const Op& op, int slot) {
  wait_all(slot_free_[slot], op);
  Desc& d = lines_[local_rank_].desc[slot];
  d.step = step_;
  d.count = op.count;
  d.kind = op.kind;
  d.arg = op.arg;
  d.caller = op.caller != nullptr ? *op.caller : Fingerprint{};
}

void ShmTransport::check_desc(int peer, int slot, const Op& op) {
  const Desc& d = lines_[peer].desc[slot];
  // Both callers described their call: compare those first, they tell the same-sized
  // collectives apart (a DDP bucket from a metric) and name the call the way the user sees it.
  if (op.caller != nullptr && d.caller.present() && !same_call(*op.caller, d.caller)) {
    fail(mismatch_error(*op.caller, global_ranks_[local_rank_], global_ranks_[peer], who(peer), d.caller,
                        "shared memory"));
  }
  if (d.step == step_ && d.kind == op.kind && d.arg == op.arg && d.count == op.count) return;
  Op theirs{d.kind, d.arg, d.count, op.deadline};
  const bool known = d.kind >= kAllReduce && d.kind <= kReduceScatter &&
                     (d.kind != kBroadcast || d.arg < static_cast<uint32_t>(local_size_)) &&
                     ((d.kind != kAllReduce && d.kind != kReduceScatter) ||
                      ((d.arg >> 8) <= 1 && (d.arg & 0xff) < kNumReduceOps)) &&
                     (d.kind != kReduce || (((d.arg >> 8) & 0xff) <= 1 && (d.arg & 0xff) < kNumReduceOps &&
                                            (d.arg >> 16) < static_cast<uint32_t>(local_size_)));
  ErrorFacts facts = facts_of(op);
  facts.peer = global_ranks_[peer];
  fail(Error(ErrorKind::Mismatch,
       detail::concat("shared memory: ranks disagree on the collective: this rank (", global_ranks_[local_rank_],
                      ") called ", describe(op), " but ", who(peer), " called ",
                      known ? describe(theirs) : std::string("something else"),
                      d.step != step_ ? " (at a different point of the sequence)" : ""),
       std::move(facts)));
}

// ---- allreduce ----------------------------------------------------------------------------------

void ShmTransport::allreduce(const void* input, void* output, size_t count, DType dtype, ReduceOp rop,
                             const Fingerprint* caller) {
  std::lock_guard<std::mutex> lock(mutex_);
  DDP4J_CHECK_ARG(reducible(dtype), "allReduce: unknown dtype ", static_cast<int>(dtype));
  const Op op{kAllReduce, (static_cast<uint32_t>(dtype) << 8) | static_cast<uint32_t>(rop), count,
              Clock::now() + options_.timeout, caller};
  reduce_any(op, input, output, count, dtype, rop, -1);
}

void ShmTransport::reduce(const void* input, void* output, size_t count, DType dtype, ReduceOp rop, int root,
                          const Fingerprint* caller) {
  std::lock_guard<std::mutex> lock(mutex_);
  DDP4J_CHECK_ARG(reducible(dtype), "reduce: unknown dtype ", static_cast<int>(dtype));
  DDP4J_CHECK_ARG(root >= 0 && root < local_size_, "reduce: root ", root, " is not a local rank of ", local_size_);
  const Op op{kReduce,
              (static_cast<uint32_t>(root) << 16) | (static_cast<uint32_t>(dtype) << 8) | static_cast<uint32_t>(rop),
              count, Clock::now() + options_.timeout, caller};
  reduce_any(op, input, output, count, dtype, rop, root);
}

void ShmTransport::reduce_any(const Op& op, const void* input, void* output, size_t count, DType dtype, ReduceOp rop,
                              int root) {
  DDP4J_CHECK_ARG(rop != ReduceOp::AVG || dtype != DType::Int64, describe(op),
                  ": ReduceOp.AVG needs a floating dtype (float32, bfloat16, float16)");
  check_usable(op);
  const size_t bytes = count * dtype_size(dtype);
  if (local_size_ == 1) {
    if (input != output && bytes > 0) std::memmove(output, input, bytes);  // AVG over one rank: x * 1.0f == x
    return;
  }
  // The store kind into the segment (see ShmOptions::stores): chosen by measurement per size class.
  ShmStoreChoice* choice = nullptr;
  bool stream = options_.stores == ShmOptions::Stores::kStreaming;
  if (options_.stores == ShmOptions::Stores::kAuto && bytes >= kAdaptiveStoreBytes) {
    choice = &stores_[store_class(bytes)];
    stream = choice->next_streams();
  }
  const auto t0 = choice != nullptr ? Clock::now() : Clock::time_point{};
  if (bytes <= std::min(options_.small_allreduce_bytes, chunk_bytes_)) {
    reduce_small(op, input, output, count, dtype, rop, root, stream);
  } else {
    reduce_chunked(op, input, output, count, dtype, rop, root, stream);
  }
  if (choice != nullptr) {
    const double ns = static_cast<double>(std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count());
    choice->record(stream, std::max(ns, 1.0) / static_cast<double>(bytes));
  }
}

// One step: every rank publishes its whole buffer and reduces all of them itself, in rank order.
void ShmTransport::reduce_small(const Op& op, const void* input, void* output, size_t count, DType dtype,
                                ReduceOp rop, int root, bool stream) {
  const int s = static_cast<int>(step_ & 1);
  const size_t bytes = count * dtype_size(dtype);
  begin_step(op, s);
  if (bytes > 0) copy_bytes(slot_data(local_rank_, s), input, bytes, stream);
  post();
  const uint32_t a = posted_;
  if (root < 0 || root == local_rank_) {  // a reduce's other ranks are done once their data is out
    wait_all(a, op);
    const void* srcs[ShmSegment::kMaxLocalRanks];
    for (int r = 0; r < local_size_; r++) {
      if (r != local_rank_) check_desc(r, s, op);
      srcs[r] = r == local_rank_ ? input : slot_data(r, s);
    }
    reduce_sources(output, srcs, local_size_, count, dtype, rop);
  }
  slot_free_[s] = a + 1;
  step_++;
}

// Per chunk: publish (all but my own slice), reduce my slice of every rank's chunk in rank order
// into my slot, then copy every other rank's reduced slice out (only the root, for a reduce).
void ShmTransport::reduce_chunked(const Op& op, const void* input, void* output, size_t count, DType dtype,
                                  ReduceOp rop, int root, bool stream) {
  const size_t es = dtype_size(dtype);
  const size_t chunk_elems = chunk_bytes_ / es;
  const int n = local_size_, me = local_rank_;
  const char* in = static_cast<const char*>(input);
  char* out = static_cast<char*>(output);
  const void* srcs[ShmSegment::kMaxLocalRanks];
  for (size_t c0 = 0; c0 < count; c0 += chunk_elems) {
    const size_t m = std::min(chunk_elems, count - c0);
    // Slices of whole cache lines, so no two ranks write the same line.
    const size_t part = round_up((m + n - 1) / n, 64 / es);
    auto lo = [&](int r) { return std::min(static_cast<size_t>(r) * part, m); };
    auto hi = [&](int r) { return std::min(static_cast<size_t>(r + 1) * part, m); };
    const int s = static_cast<int>(step_ & 1);
    char* mine = slot_data(me, s);
    const char* src = in + c0 * es;
    char* dst = out != nullptr ? out + c0 * es : nullptr;  // a reduce's non-roots may pass no output
    begin_step(op, s);
    copy_bytes(mine, src, lo(me) * es, stream);
    copy_bytes(mine + hi(me) * es, src + hi(me) * es, (m - hi(me)) * es, stream);
    post();
    const uint32_t a = posted_;
    wait_all(a, op);
    for (int r = 0; r < n; r++) {
      if (r != me) check_desc(r, s, op);
      srcs[r] = r == me ? src + lo(me) * es : slot_data(r, s) + lo(me) * es;
    }
    const bool receives = root < 0 || root == me;
    // My slice goes to my slot (for the others) and straight into my output, in one pass.
    reduce_sources(mine + lo(me) * es, srcs, n, hi(me) - lo(me), dtype, rop, receives ? dst + lo(me) * es : nullptr,
                   stream);
    post();
    const uint32_t b = posted_;
    if (receives) {
      for (int k = 1; k < n; k++) {  // start with the next rank, so ranks do not all read one slot at once
        const int r = (me + k) % n;
        wait_peer(r, b, op);
        copy_bytes(dst + lo(r) * es, slot_data(r, s) + lo(r) * es, (hi(r) - lo(r)) * es);
      }
    }
    slot_free_[s] = b + 1;
    step_++;
  }
}

// ---- reduce-scatter -----------------------------------------------------------------------------

// Per step: publish a piece of every other rank's block (piece r of my slot holds my contribution
// to rank r), then reduce my own piece of every rank in rank order straight into my output.
void ShmTransport::reduce_scatter(const void* const* blocks, void* output, size_t count, DType dtype, ReduceOp rop,
                                  const Fingerprint* caller) {
  std::lock_guard<std::mutex> lock(mutex_);
  DDP4J_CHECK_ARG(reducible(dtype), "reduceScatter: unknown dtype ", static_cast<int>(dtype));
  const Op op{kReduceScatter, (static_cast<uint32_t>(dtype) << 8) | static_cast<uint32_t>(rop), count,
              Clock::now() + options_.timeout, caller};
  DDP4J_CHECK_ARG(rop != ReduceOp::AVG || dtype != DType::Int64, describe(op),
                  ": ReduceOp.AVG needs a floating dtype (float32, bfloat16, float16)");
  check_usable(op);
  const int n = local_size_, me = local_rank_;
  const size_t es = dtype_size(dtype);
  char* out = static_cast<char*>(output);
  if (n == 1) {
    if (blocks[0] != output && count > 0) std::memmove(output, blocks[0], count * es);
    return;
  }
  // Each rank's piece of a slot: whole cache lines, so no two pieces share one.
  const size_t piece = std::max<size_t>(64 / es, (chunk_bytes_ / static_cast<size_t>(n)) / 64 * 64 / es);
  const void* srcs[ShmSegment::kMaxLocalRanks];
  size_t c0 = 0;
  do {
    const size_t m = std::min(piece, count - c0);
    const int s = static_cast<int>(step_ & 1);
    char* mine = slot_data(me, s);
    begin_step(op, s);
    for (int r = 0; r < n; r++) {
      if (r != me && m > 0) copy_bytes(mine + r * piece * es, static_cast<const char*>(blocks[r]) + c0 * es, m * es);
    }
    post();
    const uint32_t a = posted_;
    wait_all(a, op);
    for (int r = 0; r < n; r++) {
      if (r != me) check_desc(r, s, op);
      srcs[r] = r == me ? static_cast<const char*>(blocks[me]) + c0 * es : slot_data(r, s) + me * piece * es;
    }
    if (m > 0) reduce_sources(out + c0 * es, srcs, n, m, dtype, rop);
    slot_free_[s] = a + 1;  // my reads of the peers' slots end before my next post
    step_++;
    c0 += m;
  } while (c0 < count);
}

// ---- broadcast, allgather, barrier --------------------------------------------------------------

void ShmTransport::broadcast(void* data, size_t bytes, int root, const Fingerprint* caller) {
  std::lock_guard<std::mutex> lock(mutex_);
  DDP4J_CHECK_ARG(root >= 0 && root < local_size_, "broadcast: root ", root, " is not a local rank of ", local_size_);
  const Op op{kBroadcast, static_cast<uint32_t>(root), bytes, Clock::now() + options_.timeout, caller};
  check_usable(op);
  if (local_size_ == 1) return;
  char* p = static_cast<char*>(data);
  size_t off = 0;
  do {
    const size_t len = std::min(chunk_bytes_, bytes - off);
    const int s = static_cast<int>(step_ & 1);
    if (local_rank_ == root) {
      begin_step(op, s);
      if (len > 0) copy_bytes(slot_data(root, s), p + off, len);
      post();
    } else {
      post();  // keeps the phase sequence equal on every rank; says "done with the previous step"
      wait_peer(root, posted_, op);
      check_desc(root, s, op);
      if (len > 0) copy_bytes(p + off, slot_data(root, s), len);
    }
    slot_free_[s] = posted_ + 1;
    step_++;
    off += len;
  } while (off < bytes);
}

void ShmTransport::allgather(const void* input, void* output, size_t bytes, const Fingerprint* caller) {
  std::lock_guard<std::mutex> lock(mutex_);
  const Op op{kAllGather, 0, bytes, Clock::now() + options_.timeout, caller};
  check_usable(op);
  const char* in = static_cast<const char*>(input);
  char* out = static_cast<char*>(output);
  if (local_size_ == 1) {
    if (in != out && bytes > 0) std::memmove(out, in, bytes);
    return;
  }
  size_t off = 0;
  do {
    const size_t len = std::min(chunk_bytes_, bytes - off);
    const int s = static_cast<int>(step_ & 1);
    begin_step(op, s);
    if (len > 0) copy_bytes(slot_data(local_rank_, s), in + off, len);
    post();
    const uint32_t a = posted_;
    if (len > 0 && out + local_rank_ * bytes + off != in + off) {
      std::memmove(out + local_rank_ * bytes + off, in + off, len);
    }
    for (int k = 1; k < local_size_; k++) {
      const int r = (local_rank_ + k) % local_size_;
      wait_peer(r, a, op);
      check_desc(r, s, op);
      if (len > 0) copy_bytes(out + r * bytes + off, slot_data(r, s), len);
    }
    slot_free_[s] = a + 1;
    step_++;
    off += len;
  } while (off < bytes);
}

void ShmTransport::barrier(const Fingerprint* caller) {
  std::lock_guard<std::mutex> lock(mutex_);
  const Op op{kBarrier, 0, 0, Clock::now() + options_.timeout, caller};
  check_usable(op);
  if (local_size_ == 1) return;
  const int s = static_cast<int>(step_ & 1);
  begin_step(op, s);
  post();
  const uint32_t a = posted_;
  for (int r = 0; r < local_size_; r++) {
    if (r == local_rank_) continue;
    wait_peer(r, a, op);
    check_desc(r, s, op);
  }
  slot_free_[s] = a + 1;
  step_++;
}

}  // namespace ddp4j::shm
