// local_collectives.h: how a Gloo process group uses shared memory. Decides at construction which
// ranks share a host and whether the whole group agrees to use shared memory, then runs the
// collectives that shared memory serves: everything on one host, or the hierarchical all-reduce
// and broadcast (shared memory inside each host, Gloo among one leader per host) across hosts.
// "local" as in PyTorch's LOCAL_RANK: within one machine (node). Here "host" is a machine, as in
// host name, never host (CPU) memory.
#pragma once
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "comm/fingerprint.h"
#include "ddp4j/process_group.h"
#include "ddp4j/tensor.h"

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
namespace shm {
class ShmTransport;
}

/**
 * The shared-memory side of one ProcessGroupGloo. create() is collective over the whole group and
 * returns null when the group runs on plain Gloo (shared memory off on some rank, every host with
 * one rank, or a host whose transport could not be set up): all ranks decide the same way.
 *
 * Layouts: single_host() (every rank on one host) runs allreduce, broadcast, allgather and barrier
 * through the ShmTransport, which compares the ranks' op descriptors itself. Otherwise allreduce
 * and broadcast are hierarchical (shm reduce to the host leader = local rank 0, Gloo among the
 * leaders, shm broadcast back); allgather and barrier stay on the group's plain Gloo context.
 *
 * Every call is synchronous on the calling thread, bounded by the group's timeout. Errors:
 * Error(Distributed / Timeout) from the transport (then broken() is true and every later call
 * fails at once), std::exception from Gloo among the leaders (the caller translates it).
 */
class LocalCollectives {
 public:
  /**
   * @param store    the group's store (construction only; keys under "ddp4j/shm/")
   * @param device   Gloo's TCP device, for the leaders' context
   * @param enabled  this rank's shm setting (DDP4J_SHM); one rank off turns it off for all
   * @param host_id  this rank's host identity; empty: shm::host_identity()
   * Throws Error(Timeout) when not every rank publishes within `timeout`, and connection errors
   * of the leaders' context.
   */
  static std::unique_ptr<LocalCollectives> create(gloo::rendezvous::Store& store,
                                                 const std::shared_ptr<gloo::transport::Device>& device, int rank,
                                                 int size, std::chrono::milliseconds timeout, bool enabled,
                                                 const std::string& host_id);
  ~LocalCollectives();

  /** "shm" (one host) or "shm+gloo" (hierarchical). */
  const char* transport() const { return hosts_ == 1 ? "shm" : "shm+gloo"; }
  bool single_host() const { return hosts_ == 1; }
  /**
   * Single-host ops of at most this many bytes run on the caller's thread when the group's queue
   * is idle (ProcessGroupGloo::shm_inline) instead of being handed to the group's worker. Why 2
   * MiB: the hand-off costs two thread wake-ups per call (caller -> worker, worker -> caller),
   * 20-130 us on the 2-vCPU KVM guest this was measured on (more on a busy machine), as much as
   * or more than the all-reduce itself up to about 1 MiB (a 1 MiB all-reduce takes 40-90 us);
   * with the old 64 KiB limit every size from 128 KiB paid it, and how much varied from one pair
   * of processes to the next, one of the "cliffs" of the all-reduce curve (128 KiB slower than
   * 512 KiB). From a few MiB the hand-off is a small share of the op and running on the worker
   * keeps DDP's large buckets asynchronous. On one host the shared-memory work is the CPU's
   * either way (the worker takes a core from the caller's compute while it copies), so an
   * inline op costs the caller only what a queued one would cost the machine, plus the wait for
   * a late peer. Measured with `shm_allreduce_bench --path group --variants "group;group-inline"`.
   */
  static constexpr size_t kInlineBytes = size_t{2} << 20;
  size_t inline_bytes() const { return inline_bytes_; }
  bool broken() const;
  /**
   * After a failure of this host's shared-memory stage (broken()): the group rank of this host's
   * rank whose death (kill -9, a crash) caused it, and its pid; -1 and 0 when no death did.
   */
  int dead_rank() const;
  long dead_pid() const;
  /**
   * The other hosts' leaders' addresses as Gloo's errors name them, by group rank (empty for
   * non-leaders), so that a leader's failed Gloo step names the peer leader (peer_errors.h).
   */
  const std::vector<std::vector<std::string>>& leader_addresses() const { return leader_addresses_; }

  /**
   * In place; AVG (float32, bfloat16, float16) divides by the world size once. `fp` (every call
   * here; may be null): the group's fingerprint of the call, compared by the shared-memory
   * transport among this host's ranks (see ShmTransport::allreduce).
   */
  void allreduce(const Tensor& t, ReduceOp op, uint32_t tag, const Fingerprint* fp = nullptr);
  /**
   * single_host() only: reduces every rank's `t` into group rank `root`'s `t` (in place there);
   * the others' tensors are only read. AVG divides by the world size.
   */
  void reduce(const Tensor& t, int root, ReduceOp op, const Fingerprint* fp = nullptr);
  /** In place from group rank `root`. */
  void broadcast(const Tensor& t, int root, uint32_t tag, const Fingerprint* fp = nullptr);
  /** single_host() only: `bytes` per rank, group rank r's block at r * bytes of `out`. */
  void allgather(const void* in, void* out, size_t bytes, const Fingerprint* fp = nullptr);
  /**
   * single_host() only: group rank r's `out` (`count` elements) becomes the reduction of every
   * rank's blocks[r]; `out` may be this rank's own block. AVG divides by the world size.
   */
  void reduce_scatter(const std::vector<const void*>& blocks, void* out, size_t count, DType dtype, ReduceOp op,
                      const Fingerprint* fp = nullptr);
  /** single_host() only. */
  void barrier(const Fingerprint* fp = nullptr);
  /** Closes the leaders' connections so that other hosts' leaders fail now, not at their timeout. */
  void close_connections();
  /**
   * Breaks the host's shared-memory transport (ShmTransport::abort) so that this host's other
   * ranks stop waiting at once, quoting `reason`. Call only from the thread that runs the group's
   * ops, or once it has stopped.
   */
  void abort(const std::string& reason, ErrorKind kind = ErrorKind::Distributed);
  /**
   * abort() for the death of group rank `dead_rank` (pid `dead_pid`, 0 unknown), which this
   * rank's Gloo step ran into: this host's other ranks name that rank first (ShmTransport::abort_for_death).
   */
  void abort_for_death(const std::string& reason, int dead_rank, long dead_pid);

 private:
  LocalCollectives() = default;

  // Steps of create() (local_setup.cpp).
  /** Numbers every rank's host and local rank from the published identities; whether any host has two ranks. */
  bool assign_hosts(gloo::rendezvous::Store& store, const std::string& identity);
  /** This host's transport (when it has two ranks or more); returns this rank's verdict, "ok" or "fail ...". */
  std::string open_transport(gloo::rendezvous::Store& store, const std::vector<int>& local, bool enabled);
  /** The leaders' own mesh (rank = host index, size = number of hosts); leaders only, hierarchical only. */
  void connect_leaders(gloo::rendezvous::Store& store, const std::shared_ptr<gloo::transport::Device>& device);

  int world_ = 1;
  int rank_ = 0;
  int hosts_ = 1;
  int host_index_ = 0;                   // this rank's host, in order of the hosts' lowest ranks
  std::vector<int> host_of_;             // group rank -> host index
  std::vector<int> local_index_;         // group rank -> local rank on its host
  std::unique_ptr<shm::ShmTransport> shm_;   // null when this host has one rank
  std::shared_ptr<gloo::Context> leaders_;   // leaders only, hierarchical only
  std::vector<std::vector<std::string>> leader_addresses_;  // by group rank; leaders only (leader_addresses())
  std::chrono::milliseconds timeout_{0};
  size_t inline_bytes_ = 0;
};

}  // namespace ddp4j
