// shm_sync.h: the waiting primitives of the shared-memory transport: a sequence flag in shared
// memory that a waiter spins on briefly and then sleeps on (a futex shared between processes), and
// a watch over peer processes that says when one has exited.
#pragma once
#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <vector>

namespace ddp4j::shm {

/**
 * Sleeps while *word == expected, at most `timeout` (nanoseconds, > 0). A shared (not
 * FUTEX_PRIVATE_FLAG) futex, so a post from another process wakes it. Returns on a wake, a
 * timeout, a signal or when the value already differs; callers re-check their condition.
 */
void futex_wait(std::atomic<uint32_t>* word, uint32_t expected, int64_t timeout_ns);

/** Wakes every process sleeping in futex_wait on `word`. */
void futex_wake_all(std::atomic<uint32_t>* word);

/**
 * Watches a set of processes (the local peers) for exit. Uses a pidfd per process (Linux >= 5.3),
 * which reports exit even while the process is an unreaped zombie and cannot be fooled by pid
 * reuse; falls back to kill(pid, 0) plus the state in /proc/<pid>/stat where pidfds are missing.
 */
class PeerWatch {
 public:
  PeerWatch() = default;
  /** pids[i] < 0 marks an entry not watched (this process itself). */
  explicit PeerWatch(const std::vector<pid_t>& pids);
  ~PeerWatch();
  PeerWatch(const PeerWatch&) = delete;
  PeerWatch& operator=(const PeerWatch&) = delete;
  PeerWatch(PeerWatch&& o) noexcept;
  PeerWatch& operator=(PeerWatch&& o) noexcept;

  /** The index of a watched process that has exited, or -1 if all are alive. One poll(2) call. */
  int first_dead() const;

 private:
  void close_all() noexcept;
  std::vector<pid_t> pids_;
  std::vector<int> pidfds_;  // -1 where no pidfd could be opened
};

}  // namespace ddp4j::shm
