// shm_transport.h: synchronous collectives among the ranks of one host through one shared-memory
// segment. A process group calls it for its local ranks (the whole group on one host, or the
// intra-host stages of a hierarchical all-reduce); it knows nothing of tensors or Work.
#pragma once
#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "comm/fingerprint.h"
#include "comm/local/shm/shm_segment.h"
#include "comm/local/shm/shm_sync.h"
#include "ddp4j/process_group.h"
#include "ddp4j/tensor.h"

namespace gloo::rendezvous {
class Store;
}

namespace ddp4j::shm {

/** Tuning of a ShmTransport; every local rank must pass the same values. */
struct ShmOptions {
  /** Bound of every collective (and of the construction's rendezvous). */
  std::chrono::milliseconds timeout = std::chrono::minutes(30);
  /**
   * Bytes of each of a rank's two slots: large buffers move through the segment in steps of this
   * many bytes per rank (rounded up to 64). The segment holds 2 x local_size slots. 512 KiB: a
   * rank's two slots and the peer slots it reads stay within a 1-2 MiB L2; on an Intel Xeon 2-rank
   * all-reduces of 2-128 MiB ran 4-9% faster than with 1 MiB, on an AMD EPYC the size did not matter.
   */
  size_t chunk_bytes = size_t{512} << 10;
  /**
   * All-reduces of at most this many bytes (and at most chunk_bytes) take one step in which every
   * rank reduces the whole buffer itself, instead of reduce-scatter + gather (two steps). One step
   * moves more bytes (every rank reads all n buffers) but waits once: on 2 ranks of the 2-core
   * test machine it was as fast or faster up to 256 KiB, and much faster when the ranks share a
   * core with other work; 64 KiB keeps the extra reads cache-sized for 4-8 ranks.
   */
  size_t small_allreduce_bytes = 64 << 10;
  /**
   * How long a waiter spins (yielding after the first 4 us) before it sleeps on the futex, in
   * microseconds. A step of a 512 KiB chunk lasts tens of microseconds (a 1 MiB all-reduce takes
   * ~65 us on 2 ranks here), so a shorter spin would often sleep and pay a wake-up per step; the
   * yields keep the spin cheap for other work on the core.
   */
  int spin_us = 200;
  /**
   * How all-reduces and reduces of at least kAdaptiveStoreBytes write their data into the segment.
   * Why it matters: on the 2-vCPU KVM guest this was tuned on, the memory system switches over
   * seconds between two modes (the hypervisor moving the vCPUs; see README.md). In one, a line
   * one core wrote moves to the other core's cache fast and ordinary (cached) stores are best
   * (1 MiB all-reduce 42-47 us). In the other, every such transfer is slow (the 8-byte
   * all-reduce takes 0.5 us instead of 0.17) and a cached-store all-reduce falls to 1.7 GB/s at
   * every size from 128 KiB up (1 MiB: 600 us), while non-temporal stores, which send the data to
   * memory and out of the writer's cache, keep 10-12 GB/s (1 MiB: 84-118 us); in the first mode
   * they cost 1.5-2.6x. A JMH fork landing in one mode or the other made the curve's "cliffs"
   * (8 MiB as slow as 32 MiB, 128 KiB slower than 512 KiB). kAuto measures both and keeps the
   * faster (ShmStoreChoice); the store kind is each rank's own business (it only changes how
   * bytes reach memory), so ranks never need to agree on it.
   */
  enum class Stores { kAuto, kCached, kStreaming };
  Stores stores = Stores::kAuto;
  /** The futex sleep slice between checks of peers' liveness, the abort flag and the deadline. */
  std::chrono::milliseconds sleep_slice = std::chrono::milliseconds(2);
};

/** All-reduces and reduces from this many bytes choose their store kind (ShmOptions::stores); smaller ones use cached stores. */
constexpr size_t kAdaptiveStoreBytes = 4096;

/**
 * Picks cached or non-temporal stores for one size class of all-reduces (the sizes between two
 * powers of 2) from the measured cost of each kind, in ns per byte of whole calls: the first two
 * calls of a class use cached stores, the next two streaming ones, then the cheaper kind, with the
 * other tried again for two calls every kExplorePeriod calls (every kEarlyPeriod at first), so that a change of the machine's
 * mode is seen within that many calls (the kind in use is re-measured by every call). A try
 * counts the better of its two calls: the first after a switch runs with the segment's lines
 * where the other kind left them. Every rank makes the same calls of a class, so every rank tries
 * at the same calls; ranks that weigh the figures differently only pick different store kinds,
 * which is harmless.
 */
class ShmStoreChoice {
 public:
  static constexpr uint32_t kExplorePeriod = 32;
  static constexpr uint32_t kTryCalls = 2;
  /** The first kEarlyCalls calls after the first tries re-try every kEarlyPeriod calls. */
  static constexpr uint32_t kEarlyCalls = 32;
  static constexpr uint32_t kEarlyPeriod = 16;
  /** Whether the next call of this class streams; record() must follow with what it cost. */
  bool next_streams() {
    const uint32_t k = calls_++;
    if (k < 2 * kTryCalls) {  // the first calls: each kind in turn
      trying_ = true;
      first_of_try_ = k % kTryCalls == 0;
      return k >= kTryCalls;
    }
    const bool best = cost_[1] < cost_[0];
    // Early calls try the other kind more often: a short-lived process (a benchmark's fork, the
    // first steps of training) should not keep a choice its first, noisy calls made.
    const uint32_t j = k - 2 * kTryCalls;
    const uint32_t period = j < kEarlyCalls ? kEarlyPeriod : kExplorePeriod;
    const uint32_t phase = (j < kEarlyCalls ? j : j - kEarlyCalls) % period;
    trying_ = phase >= period - kTryCalls;
    first_of_try_ = phase == period - kTryCalls;
    return trying_ ? !best : best;
  }
  /**
   * Records what the call next_streams() announced cost, in ns per byte (> 0). The kind in use
   * keeps a running average (half the old estimate, half the call); a kind being tried takes the
   * better of its try's calls alone, as its old estimate may date from the other mode.
   */
  void record(bool streamed, double ns_per_byte) {
    double& c = cost_[streamed ? 1 : 0];
    if (trying_) {
      c = first_of_try_ ? ns_per_byte : std::min(c, ns_per_byte);
    } else {
      c = 0.5 * (c + ns_per_byte);
    }
  }
  /** The current estimates (0: not measured yet), cached and streaming, ns per byte. */
  double cost(bool streamed) const { return cost_[streamed ? 1 : 0]; }

 private:
  double cost_[2] = {0, 0};
  uint32_t calls_ = 0;
  bool trying_ = false;
  bool first_of_try_ = false;
};

/**
 * Collectives among `local_size` processes of one host, run on the calling thread (no worker
 * thread: an 8-byte all-reduce costs a few cache-line transfers, 0.2-0.6 us on 2 idle cores, not a thread
 * wake-up).
 *
 * Construction is collective: every local rank constructs its transport with the same store
 * prefix, local size and options; local rank 0 creates the segment (see ShmSegment: a memfd, so
 * nothing is ever left in /dev/shm). The store is used only during construction.
 *
 * Every local rank must call the same collectives in the same order with the same sizes (and
 * dtype, op, root); a disagreement is detected at the step where it shows and throws
 * Error(Mismatch). Calls on one transport are serialised by a mutex, but callers on several
 * threads must still agree on the order across ranks.
 *
 * Failures: every wait is bounded by `timeout` (Error(Timeout) naming the op, its size, the
 * timeout and the rank waited for) and notices a peer that is gone: one whose process ended
 * without exiting (Error(PeerLost, Killed): "rank 1 (pid 1234) died during allReduce of 8388608 float32
 * elements (shared memory): its process ended without exiting (killed ... or crashed)"), and one
 * that exited (exit(): main returned, System.exit, SIGTERM) with the transport still open, which
 * marks the segment from an exit handler ("... abandoned: rank 1 (pid 1234) exited without closing
 * its process group ..."). A failing rank marks the segment
 * aborted, so peers waiting on it fail at once (quoting its message, with its kind) instead of
 * running into the timeout. After any failure the transport is broken: every later call throws
 * Error(Distributed) at once.
 */
/** In the message for a peer whose process ended without exiting (kill -9, a crash): the words of PeerLoss::Killed. */
inline constexpr const char* kPeerKilled = "ended without exiting";

class ShmTransport {
 public:
  /**
   * @param store        rendezvous only (Gloo's FileStore, HashStore, or the Java store adapter)
   * @param prefix       key prefix unique to this group and its local ranks, e.g. "ddp4j/shm/<host index>"
   * @param local_rank   0 .. local_size-1
   * @param local_size   processes of this group on this host (1 is allowed: ops are local copies)
   * @param global_ranks global_ranks[local_rank] = the group rank, for messages (size local_size)
   * @param options      timeout and chunking; must be equal on every local rank
   * Throws Error(Timeout) / Error(Distributed) from the rendezvous (see ShmSegment),
   * Error(InvalidArgument) for inconsistent arguments.
   */
  ShmTransport(gloo::rendezvous::Store& store, const std::string& prefix, int local_rank, int local_size,
               std::vector<int> global_ranks, ShmOptions options = {});
  ~ShmTransport();
  ShmTransport(const ShmTransport&) = delete;
  ShmTransport& operator=(const ShmTransport&) = delete;

  int local_rank() const { return local_rank_; }
  int local_size() const { return local_size_; }

  /**
   * Element-wise reduction of `count` elements across the local ranks: output = input[0] op
   * input[1] op ... op input[n-1] in local-rank order, bit-identical on every rank. `input` and
   * `output` are this process's buffers of count elements of `dtype` (Float32, Int64, BFloat16 or
   * Float16; not Bool); they may be the same buffer (in place) but must not otherwise overlap. AVG
   * (floating dtypes only; 16-bit ones combined in float32 and rounded once, shm_reduce.h) is SUM times
   * 1.0f / local_size; for a hierarchical AVG use SUM here and divide by the world size once.
   *
   * `caller` (optional, also on every call below): the process group's fingerprint of the call.
   * When the ranks pass one, a rank whose peer passed a different one fails with Error(Mismatch)
   * naming both calls (mismatch_message) before it reads any peer data; without one, only the
   * transport's own descriptors (op, dtype, size) are compared.
   */
  void allreduce(const void* input, void* output, size_t count, DType dtype, ReduceOp op,
                 const Fingerprint* caller = nullptr);

  /**
   * Like allreduce, but only local rank `root` receives the result in `output` (the intra-host
   * stage of a hierarchical all-reduce, before the leaders' Gloo all-reduce). Other ranks' `output`
   * is not touched (it may be null there) and they return as soon as their data is consumed.
   */
  void reduce(const void* input, void* output, size_t count, DType dtype, ReduceOp op, int root,
              const Fingerprint* caller = nullptr);

  /**
   * Reduces block r of every local rank into local rank r's `output` (`count` elements): blocks[r]
   * points at this rank's contribution to rank r (local_size pointers; PyTorch's reduce_scatter
   * with its input list, or reduce_scatter_tensor with pointers into one buffer). Each step sends
   * each rank chunk_bytes / local_size of every other rank's block, and each rank reduces its own
   * block in rank order, so the bits do not depend on the store kind or the timing. `output` may
   * be this rank's own block (blocks[local rank]) but no other. AVG divides by the local size.
   */
  void reduce_scatter(const void* const* blocks, void* output, size_t count, DType dtype, ReduceOp op,
                      const Fingerprint* caller = nullptr);

  /** Copies local rank `root`'s `bytes` bytes at `data` into every other local rank's `data`. */
  void broadcast(void* data, size_t bytes, int root, const Fingerprint* caller = nullptr);

  /**
   * Gathers every local rank's `bytes` bytes at `input` into `output` (local_size * bytes bytes),
   * local rank r's block at offset r * bytes. `input` may be this rank's own block of `output`.
   */
  void allgather(const void* input, void* output, size_t bytes, const Fingerprint* caller = nullptr);

  /** Returns once every local rank has entered the barrier. */
  void barrier(const Fingerprint* caller = nullptr);

  /** The store choice of all-reduces and reduces of `bytes` (>= kAdaptiveStoreBytes), for tests and benchmarks. */
  const ShmStoreChoice& store_choice(size_t bytes) const { return stores_[store_class(bytes)]; }

  /** Whether an earlier failure made this transport unusable (every call then throws). */
  bool broken() const { return !broken_.empty(); }

  /**
   * The group rank of the local peer whose death (kill -9, a crash) failed this transport, seen
   * by this rank or read from the segment's abort area; -1 when none did (or nothing failed).
   * A hierarchical group's leader passes it on to the other hosts (peer_loss.h), so that they
   * name the dead rank rather than the leader that closed its connections.
   */
  int dead_rank() const { return dead_rank_; }
  /** The pid of dead_rank()'s process; 0 when none died (or unknown). */
  pid_t dead_pid() const { return dead_pid_; }

  /**
   * Breaks the transport from outside a call, e.g. when the process group failed elsewhere (a
   * leader's Gloo step) or is being destroyed: peers waiting in the segment stop at once with
   * an error of `kind` quoting `reason` (PeerLost: this rank closed its group, a clean exit),
   * instead of waiting for their timeout. Does nothing if already broken. Call only while no other
   * thread is inside a call on this transport.
   */
  void abort(const std::string& reason, ErrorKind kind = ErrorKind::Distributed);
  /**
   * abort() for the death of group rank `dead_rank` (pid `dead_pid`, 0 unknown), which this rank
   * learned of outside the segment (a Gloo step: a host leader's among the hosts, or the group's
   * checks): this host's other ranks then name the dead rank first, and dead_rank() returns it on
   * every rank of this host. The dead rank may be a local rank or one of another host.
   */
  void abort_for_death(const std::string& reason, int dead_rank, pid_t dead_pid);

 private:
  struct Op;  // what the current call is, for checks and messages
  struct Line;
  struct AbortArea;

  static int store_class(size_t bytes) { return 63 - __builtin_clzll(static_cast<unsigned long long>(bytes | 1)); }
  void check_usable(const Op& op) const;
  /** Marks the segment aborted with e's message and kind (peers waiting on it fail at once), then throws e. */
  [[noreturn]] void fail(const Error& e);
  /** The facts every error of `op` carries: the call in words, this rank, the transport, the #seq. */
  ErrorFacts facts_of(const Op& op) const;
  /** Error(PeerLost) about local rank `local` during `op`. */
  Error peer_lost(const Op& op, int local, PeerLoss loss, const std::string& message) const;
  /** fail() for the death of local rank `dead`, recorded in the abort area for the other survivors. */
  [[noreturn]] void fail_died(int dead, const Op& op);
  /**
   * Claims the abort area for `message`; `dead`: the local rank whose death caused it, or -1;
   * `elsewhere_rank`, `elsewhere_pid`: a group rank on another host whose death caused it, or -1.
   */
  void mark_aborted(const std::string& message, int dead, int elsewhere_rank = -1, pid_t elsewhere_pid = 0,
                    ErrorKind kind = ErrorKind::Distributed);
  /** Records the death that failed this transport (dead_rank()): local rank `local`. */
  void saw_death(int local);
  void post();
  void wait_peer(int peer, uint32_t target, const Op& op);
  void wait_all(uint32_t target, const Op& op);
  void begin_step(const Op& op, int slot);
  void check_desc(int peer, int slot, const Op& op);
  char* slot_data(int rank, int slot) const;
  std::string describe(const Op& op) const;
  std::string who(int local) const;
  /** The error of a call that stops because the abort area is set (a peer failed, closed or exited). */
  Error abandoned(const Op& op);
  /** The error of a call that stops because local rank `dead` was killed or crashed: Error(PeerLost, Killed). */
  Error died_during(int dead, const Op& op) const;
  /** The error of a call that stops because local rank `via` failed on the death of a rank of another host. */
  Error died_elsewhere(int via, const Op& op) const;
  /** Adds this transport to those the exit handler marks; registers the handler once per process. */
  void register_for_exit();
  /** Marks the segment: this rank's process is exiting with the transport still open. */
  void mark_exited();
  static void on_process_exit();

  void reduce_any(const Op& op, const void* input, void* output, size_t count, DType dtype, ReduceOp rop, int root);
  // root < 0: every rank receives the result (allreduce); otherwise only local rank root (reduce).
  // stream: write the segment with non-temporal stores (ShmOptions::stores).
  void reduce_small(const Op& op, const void* input, void* output, size_t count, DType dtype, ReduceOp rop, int root,
                    bool stream);
  void reduce_chunked(const Op& op, const void* input, void* output, size_t count, DType dtype, ReduceOp rop,
                      int root, bool stream);

  const int local_rank_;
  const int local_size_;
  const std::vector<int> global_ranks_;
  const ShmOptions options_;
  size_t chunk_bytes_ = 0;
  ShmSegment segment_;
  PeerWatch peers_;
  std::vector<pid_t> pids_;
  AbortArea* abort_ = nullptr;
  Line* lines_ = nullptr;
  char* slots_ = nullptr;

  std::mutex mutex_;
  uint32_t posted_ = 0;           // phases this rank has posted (all ranks post the same sequence)
  uint32_t slot_free_[2] = {0, 0};  // my slot s may be rewritten once every peer posted this many
  uint64_t step_ = 0;             // steps so far; slot = step_ & 1
  ShmStoreChoice stores_[64];     // by floor(log2(bytes)) of all-reduces and reduces (ShmOptions::stores kAuto)
  std::string broken_;
  int dead_rank_ = -1;  // the group rank whose death failed this transport (dead_rank()), or -1
  pid_t dead_pid_ = 0;
};

/** The segment bytes a transport of `local_size` ranks with `chunk_bytes` slots maps. */
size_t shm_segment_bytes(int local_size, size_t chunk_bytes);

}  // namespace ddp4j::shm
