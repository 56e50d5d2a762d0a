// shm_segment.h: one shared-memory segment mapped by every local rank of a group.
//
// Why memfd and not shm_open: a memfd has no name in any file system, so nothing can be left in
// /dev/shm whatever happens (kill -9 at any point, including during the rendezvous); its memory
// goes back to the kernel when the last process unmaps it. It is also not bounded by the size of a
// container's /dev/shm (64 MiB by default under Docker). Peers reach it through
// /proc/<creator pid>/fd/<fd>, which needs only the same user and a dumpable creator (true of a
// JVM and of any normal process); shm_open would need a name that a crash between creation and
// unlink leaves behind.
#pragma once
#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

namespace gloo::rendezvous {
class Store;
}

namespace ddp4j::shm {

/**
 * A shared mapping of `bytes` usable bytes (zero-filled, 4096-byte aligned), plus the pid of every
 * local rank. Construction is collective over the local ranks:
 *  - local rank 0 creates a memfd, sizes and maps it, and publishes "ok <pid> <fd> <bytes> <nonce>"
 *    under "<prefix>/segment" in the store (or "fail <reason>");
 *  - the others wait for that key, open /proc/<pid>/fd/<fd>, map it and check its size and nonce
 *    (a stale key from an earlier group with the same prefix is refused, not mapped), and write
 *    their pid into the segment's header;
 *  - every rank publishes its verdict, "ok" or "fail <reason>", under "<prefix>/attached/<local
 *    rank>" and waits for everyone's; then rank 0 closes its descriptor. From then on the memory
 *    lives exactly as long as the mappings, and nothing refers to it by name.
 * All local ranks therefore succeed or fail together: a rank that cannot map the segment makes
 * every rank throw Error(Distributed) with its reason (so a process group can fall back to Gloo on
 * all of them), not wait for the timeout. Throws Error(Timeout) when a key does not appear within
 * `timeout` (a local rank never constructed its segment), Error(InvalidArgument) for bad
 * arguments. Not copyable; movable.
 */
class ShmSegment {
 public:
  /** Most local ranks a segment supports (the pid table lives in the first page). */
  static constexpr int kMaxLocalRanks = 512;

  ShmSegment(gloo::rendezvous::Store& store, const std::string& prefix, int local_rank, int local_size, size_t bytes,
             std::chrono::milliseconds timeout);
  ~ShmSegment();
  ShmSegment(const ShmSegment&) = delete;
  ShmSegment& operator=(const ShmSegment&) = delete;
  ShmSegment(ShmSegment&& other) noexcept;
  ShmSegment& operator=(ShmSegment&& other) noexcept;

  /** The usable bytes (after the segment's own header page). */
  void* data() const { return data_; }
  size_t size() const { return bytes_; }
  /** The pid of local rank r (0 <= r < local_size), as seen in this pid namespace. */
  pid_t pid(int local_rank) const;
  int local_rank() const { return local_rank_; }
  int local_size() const { return local_size_; }

 private:
  void release() noexcept;

  void* base_ = nullptr;  // the whole mapping: header page, then data
  size_t mapped_ = 0;
  void* data_ = nullptr;
  size_t bytes_ = 0;
  int local_rank_ = 0;
  int local_size_ = 0;
};

}  // namespace ddp4j::shm
