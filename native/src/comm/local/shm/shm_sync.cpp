// Futex and peer-liveness primitives (see shm_sync.h).
#include "comm/local/shm/shm_sync.h"

#include <linux/futex.h>
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <fstream>
#include <string>
#include <utility>

namespace ddp4j::shm {

static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t) && std::atomic<uint32_t>::is_always_lock_free,
              "futex words must be plain lock-free 32-bit words");

void futex_wait(std::atomic<uint32_t>* word, uint32_t expected, int64_t timeout_ns) {
  struct timespec ts;
  ts.tv_sec = static_cast<time_t>(timeout_ns / 1000000000);
  ts.tv_nsec = static_cast<long>(timeout_ns % 1000000000);
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT, expected, &ts, nullptr, 0);
}

void futex_wake_all(std::atomic<uint32_t>* word) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

namespace {

int open_pidfd(pid_t pid) {
#ifdef SYS_pidfd_open
  return static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
#else
  (void)pid;
  return -1;
#endif
}

/** Without a pidfd: gone (ESRCH) or a zombie / dead entry in /proc. */
bool exited_without_pidfd(pid_t pid) {
  if (kill(pid, 0) != 0 && errno == ESRCH) return true;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return true;
  const size_t close_paren = line.rfind(')');
  if (close_paren == std::string::npos || close_paren + 2 >= line.size()) return false;
  const char state = line[close_paren + 2];
  return state == 'Z' || state == 'X';
}

}  // namespace

PeerWatch::PeerWatch(const std::vector<pid_t>& pids) : pids_(pids), pidfds_(pids.size(), -1) {
  for (size_t i = 0; i < pids_.size(); i++) {
    if (pids_[i] > 0) pidfds_[i] = open_pidfd(pids_[i]);
  }
}

PeerWatch::~PeerWatch() { close_all(); }

PeerWatch::PeerWatch(PeerWatch&& o) noexcept { *this = std::move(o); }

PeerWatch& PeerWatch::operator=(PeerWatch&& o) noexcept {
  if (this != &o) {
    close_all();
    pids_ = std::move(o.pids_);
    pidfds_ = std::move(o.pidfds_);
    o.pids_.clear();
    o.pidfds_.clear();
  }
  return *this;
}

void PeerWatch::close_all() noexcept {
  for (int fd : pidfds_) {
    if (fd >= 0) close(fd);
  }
  pidfds_.clear();
}

int PeerWatch::first_dead() const {
  // pidfds: one poll over all of them (readable once the process has exited).
  struct pollfd fds[64];
  int idx[64];
  int n = 0;
  for (size_t i = 0; i < pids_.size(); i++) {
    if (pids_[i] <= 0) continue;
    if (pidfds_[i] < 0) {
      if (exited_without_pidfd(pids_[i])) return static_cast<int>(i);
      continue;
    }
    fds[n] = {pidfds_[i], POLLIN, 0};
    idx[n] = static_cast<int>(i);
    if (++n == 64 || i + 1 == pids_.size()) {
      if (poll(fds, static_cast<nfds_t>(n), 0) > 0) {
        for (int k = 0; k < n; k++) {
          if (fds[k].revents != 0) return idx[k];
        }
      }
      n = 0;
    }
  }
  if (n > 0 && poll(fds, static_cast<nfds_t>(n), 0) > 0) {
    for (int k = 0; k < n; k++) {
      if (fds[k].revents != 0) return idx[k];
    }
  }
  return -1;
}

}  // namespace ddp4j::shm
