// process_group.h: the CPU backend. Rendezvous through a gloo::rendezvous::Store (the Java
// Store through jni/java_store.h, or Gloo's own HashStore in C++ tests), a full mesh of TCP pairs, and
// one worker thread per group that runs the queued collectives in order.
#pragma once
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "comm/fingerprint.h"
#include "comm/flight_recorder.h"
#include "comm/gloo/options.h"
#include "ddp4j/process_group.h"

namespace gloo {
class Context;
namespace rendezvous {
class Store;
}
namespace transport {
class Device;
}
}  // namespace gloo

namespace ddp4j {

class SmallAllreduce;
class LocalCollectives;
class GlooPointToPoint;
class PeerLossRecords;

/**
 * A ProcessGroup over Gloo's TCP transport (and shared memory between ranks of one host) for CPU
 * tensors of every dtype: broadcast, allgather, send and recv move float32, int64, bfloat16, float16
 * and bool alike (as bytes); the reductions take all but bool (bfloat16 / float16 combined in
 * float32 and rounded back, reduce_functions.h), AVG the floating ones only. Named as PyTorch's
 * C++ class; Java's org.ddp4j.distributed.ProcessGroupGloo drives it through jni/gloo_natives.cpp.
 *
 * Construction is the rendezvous: every rank sets "ddp4j/joined/<rank>" in the store and waits for
 * all of them (timeout: Error(Timeout) naming the missing ranks), then Gloo exchanges addresses
 * under "ddp4j/gloo/" and connects a full mesh. The store is used only during construction.
 *
 * Errors of a collective surface through its Work: Error(Distributed) for a peer that died (naming
 * its rank when the failed connection identifies it) or for ranks that disagree on the collective;
 * Error(Timeout) naming the op, its element count and the timeout. After a network error or a
 * timeout the group is unusable (Gloo closes its connections) and every later collective fails
 * fast saying so. Ranks that called different collectives fail with Error(Distributed) naming
 * their own call and a peer's (see Fingerprint, allreduce_bucket); that leaves the group usable.
 *
 * Ranks that share a host may run collectives through shared memory (GlooOptions::shm,
 * LocalCollectives; transport() says which); a failure there (dead peer, timeout, disagreement the
 * transport detects) also makes the group unusable.
 */
class ProcessGroupGloo : public ProcessGroup {
 public:
  /**
   * `records`: where a rank that loses a peer in a collective records the death, and reads its
   * peers' records (PeerLossRecords), so that every survivor names the dead rank; its calls must
   * give up within seconds. Null: errors name the peer whose connection closed.
   */
  ProcessGroupGloo(gloo::rendezvous::Store& store, int rank, int size, GlooOptions options,
                   std::shared_ptr<gloo::rendezvous::Store> records = nullptr);
  /** Fails collectives that have not started, waits for the running one, closes the connections. */
  ~ProcessGroupGloo() override;

  std::string backend() const override { return "gloo"; }
  /** "shm" (all ranks on one host, shared memory), "shm+gloo" (hierarchical) or "gloo". */
  std::string transport() const;
  const GlooOptions& options() const { return options_; }
  /** Every collective and transfer, from the call to its end (DDP4J_FLIGHT_RECORDER_ENTRIES). */
  const FlightRecorder* flight_recorder() const override { return &recorder_; }

  std::shared_ptr<Work> allreduce(const Tensor& tensor, ReduceOp op) override;
  std::shared_ptr<Work> broadcast(const Tensor& tensor, int root) override;
  std::shared_ptr<Work> allgather(const Tensor& output, const Tensor& input) override;
  std::shared_ptr<Work> allgather(const std::vector<Tensor>& outputs, const Tensor& input) override;
  std::shared_ptr<Work> barrier() override;

  /**
   * As allreduce at the root; the other ranks' tensors stay as they were. On one host it is the
   * shared-memory transport's own reduce, after a fingerprint exchange through the segment (the
   * non-roots neither copy nor receive). Otherwise the other ranks reduce a copy of their tensor,
   * which moves as much data as an all-reduce, on the same paths (the hierarchical path, the
   * small all-reduce, Gloo's ring), with the fingerprint checked the same way.
   */
  std::shared_ptr<Work> reduce(const Tensor& tensor, int root, ReduceOp op) override;
  /** An all-reduce of a copy of the input, of which each rank keeps its block. */
  std::shared_ptr<Work> reduce_scatter(const Tensor& output, const Tensor& input, ReduceOp op) override;
  std::shared_ptr<Work> reduce_scatter(const Tensor& output, const std::vector<Tensor>& inputs, ReduceOp op) override;
  /** Over the group's Gloo connections (also when the group's collectives use shared memory); see GlooPointToPoint. */
  std::shared_ptr<Work> send(const Tensor& tensor, int dst, int tag) override;
  std::shared_ptr<Work> recv(const Tensor& tensor, int src, int tag) override;

  /**
   * DDP's all-reduce of bucket `bucket` (0-based) of `buckets` (-1 / 0: not a bucket): allreduce
   * with the bucket in its fingerprint and so in its messages, and with `run_inline`: when nothing
   * is queued or running, the collective runs on the calling thread and the returned Work is
   * already complete (that saves the two thread hand-offs of the worker queue when the caller
   * would wait at once anyway).
   *
   * How every all-reduce compares its Fingerprint with the peers': on one host the shared-memory
   * transport compares them in its slot descriptors; up to small_allreduce_bytes they ride in
   * the small all-reduce's message; neither costs a message of its own. Gloo's ring (larger
   * tensors, and the leaders' stage of the hierarchical path) exchanges them first, one small
   * message each way, because ranks that enter the ring with different sizes make Gloo abort the
   * process. A mismatch fails every rank with Error(Distributed) naming its own call and a peer's
   * (mismatch_message) before any data moved; the group stays usable (shared memory: broken).
   */
  std::shared_ptr<Work> allreduce_bucket(const Tensor& tensor, ReduceOp op, bool run_inline, int bucket = -1,
                                         int buckets = 0) override;

 private:
  /** When an op compares its fingerprint with the peers'. */
  enum class Check {
    kBefore,  // exchange fingerprints first (one small message each way), then move the data
    kAlong,   // the data movement carries and compares them (small all-reduce, shared memory)
    kNone,    // not at all (check_collectives off)
  };
  using Run = std::function<void(uint32_t tag, const Fingerprint& fp)>;
  struct Op {
    std::shared_ptr<Work> work;
    Fingerprint fp;  // seq assigned at enqueue
    Run run;         // the data movement; empty for barrier
    Check check = Check::kBefore;
    uint64_t record = 0;     // its flight record (0: recorder off)
    bool inline_op = false;  // runs on the caller's thread: recorded as started at once
  };
  /** How an all-reduce of one tensor moves its data, and when it compares fingerprints. */
  struct Movement {
    Run run;
    Check check;
  };

  // Construction steps (process_group.cpp), after the ranks have joined (rendezvous.h).
  /** The group's full mesh (context_), its peers' addresses, and send/recv over it (p2p_). */
  void connect_mesh(gloo::rendezvous::Store& store, const std::shared_ptr<gloo::transport::Device>& device);
  /** The small all-reduce's own connections and buffers (small_), when the group uses it. */
  void connect_small_allreduce(gloo::rendezvous::Store& store,
                               const std::shared_ptr<gloo::transport::Device>& device);
  std::shared_ptr<Work> enqueue(const Fingerprint& fp, std::vector<Tensor> keep_alive,
                                std::function<void(uint32_t, const Fingerprint&)> run, Check check,
                                bool run_inline = false);
  std::shared_ptr<Work> allreduce_any(const Tensor& tensor, ReduceOp op, bool run_inline, int bucket, int buckets);
  /** The all-reduce of `t` in place, on the path its size takes (shared memory, small all-reduce, ring). */
  Movement allreduce_movement(const Tensor& t, ReduceOp op);
  /** reduce_scatter with the input as `blocks` (one flat tensor, or one per rank) of `elements` in all. */
  std::shared_ptr<Work> reduce_scatter_blocks(const Tensor& output, const std::vector<Tensor>& blocks,
                                              int64_t elements, ReduceOp op);
  /** This group's failure so far ("" if none). Any thread. */
  std::string broken() const;
  /** Records the group's first failure. Any thread. */
  void set_broken(const std::string& reason);
  /** Records the rank whose death (pid, 0 unknown) broke the group, if first. Any thread. */
  void set_lost(int dead_rank, long dead_pid);
  /**
   * Breaks this host's shared-memory transport quoting `reason`, naming the dead rank there when
   * set_lost knows one (LocalCollectives::abort_for_death). Only the thread that runs the ops.
   */
  void abort_local(const std::string& reason);
  void worker_loop();
  void run_op(Op& op);
  void exchange_headers(const Op& op, uint32_t tag);
  /** Throws Error(Distributed) (mismatch_message) if a peer's fingerprint in the exchange `parity` differs. */
  void check_peers(const Fingerprint& mine, int parity);
  void close_connections();  // after a failure: peers blocked on this rank fail now, not at their timeout
  /** Every rank on this host: the transport checks the ranks agree, so the Gloo header is skipped. */
  bool shm_only() const;
  /** Whether a shared-memory op of `bytes` may run on the caller's thread when the queue is idle. */
  bool shm_inline(size_t bytes) const;

  GlooOptions options_;
  FlightRecorder recorder_;  // before every member whose threads record into it
  FlightTransport flight_transport_ = FlightTransport::kGloo;
  std::shared_ptr<gloo::Context> context_;
  std::shared_ptr<LocalCollectives> local_;  // shared memory; null: plain Gloo (see GlooOptions::shm)
  std::shared_ptr<SmallAllreduce> small_;  // the small all-reduce (see GlooOptions); null when off. Only
                                           // the op that holds running_ uses it
  std::unique_ptr<PeerLossRecords> loss_;  // null without a records store
  /** The error for a failed Gloo call (translate_gloo_error), naming the dead rank where the records tell it; records it. */
  Error gloo_failure(const std::string& description, const std::string& gloo_message, uint64_t seq);
  std::vector<std::vector<std::string>> peer_addresses_;  // by rank, as Gloo's error messages print them (peer_errors.h)
  std::unique_ptr<GlooPointToPoint> p2p_;                // send and recv

  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<Op> queue_;
  bool stopping_ = false;
  bool running_ = false;  // an op is running (on the worker, or inline on a caller's thread)

  uint64_t seq_ = 0;  // collectives enqueued (under mutex_); the next one's fingerprint seq is seq_ + 1

  mutable std::mutex broken_mutex_;
  std::string broken_;  // first network error or timeout; later collectives and transfers fail fast
  int lost_rank_ = -1;  // the rank whose death broke the group (set_lost), or -1
  long lost_pid_ = 0;
  bool local_aborted_ = false;  // only the thread that set running_ (the worker, or a caller running an op inline)

  std::thread worker_;
};

}  // namespace ddp4j
