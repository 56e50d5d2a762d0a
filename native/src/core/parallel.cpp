// The intra-op thread pool behind ddp4j/parallel.h (PyTorch's at::parallel_for over its intra-op
// pool, and torch.set_num_threads / get_num_threads).
//
// Workers are created once (lazily, when an op first needs them) and live until the process ends
// or set_num_threads shrinks the pool. A parallel_for splits its range into at most
// get_num_threads() contiguous chunks; the caller runs chunk 0 and worker k - 1 runs chunk k, so
// only the workers an op needs are woken. Between ops a worker spins for kSpin and then sleeps on
// a condition variable: ops come in quick succession during a training step (a small ConvNet
// makes ~100 per step), so most wake-ups cost a cache-line transfer, not a futex call.
//
// One parallel_for at a time owns the workers. A second thread that calls parallel_for meanwhile
// (Gloo's worker thread scaling a bucket while backward runs) runs its loop serially rather than
// waiting, and so does a parallel_for inside a body. Neither changes any result: kernels compute
// each output element inside one fn call whatever the split.
#include "ddp4j/parallel.h"

#include <cblas.h>
#include <pthread.h>
#include <sched.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <system_error>
#include <thread>
#include <vector>
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#include "ddp4j/errors.h"

namespace ddp4j {
namespace {

/** How long an idle worker (or a waiting caller) spins before it sleeps. */
constexpr auto kSpin = std::chrono::microseconds(100);

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#else
  std::this_thread::yield();
#endif
}

/**
 * A condition one thread waits for and others make true: the waiter spins for kSpin, then sleeps.
 * The flag `sleeping` and the condition's own atomics are sequentially consistent, so a waker
 * either sees the waiter asleep (and notifies under the mutex) or the waiter sees the condition.
 */
class Waiter {
 public:
  /** Returns once ready() holds; spins first when `spin` (see spin_allowed), yielding the CPU after a while. */
  template <typename Ready>
  void await(Ready ready, bool spin) {
    if (ready()) return;
    if (spin) {
      const auto start = std::chrono::steady_clock::now();
      for (;;) {
        for (int i = 0; i < 64; ++i) {
          if (ready()) return;
          cpu_relax();
        }
        const auto spun = std::chrono::steady_clock::now() - start;
        if (spun >= kSpin) break;
        // A busy machine: let whoever we wait for (or anyone else) run before spinning on.
        if (spun >= kSpin / 8) std::this_thread::yield();
      }
    }
    std::unique_lock<std::mutex> lock(mu_);
    sleeping_.store(true);
    cv_.wait(lock, ready);
    sleeping_.store(false);
  }

  /** Call after making the condition true. */
  void wake() {
    if (sleeping_.load()) {
      std::lock_guard<std::mutex> lock(mu_);
      cv_.notify_one();
    }
  }

 private:
  std::atomic<bool> sleeping_{false};
  std::mutex mu_;
  std::condition_variable cv_;
};

thread_local bool t_in_parallel = false;

/** Sets t_in_parallel for a scope, restoring the previous value. */
class ParallelRegion {
 public:
  ParallelRegion() : previous_(t_in_parallel) { t_in_parallel = true; }
  ~ParallelRegion() { t_in_parallel = previous_; }
  ParallelRegion(const ParallelRegion&) = delete;
  ParallelRegion& operator=(const ParallelRegion&) = delete;

 private:
  bool previous_;
};

/** The CPUs this process may run on (sched_getaffinity), at least 1. */
int affinity_cpus() {
  for (int cpus = 1024; cpus <= 1 << 20; cpus *= 4) {
    cpu_set_t* set = CPU_ALLOC(cpus);
    if (set == nullptr) break;
    const size_t bytes = CPU_ALLOC_SIZE(cpus);
    CPU_ZERO_S(bytes, set);
    if (sched_getaffinity(0, bytes, set) == 0) {
      const int n = CPU_COUNT_S(bytes, set);
      CPU_FREE(set);
      return n > 0 ? n : 1;
    }
    CPU_FREE(set);
    if (errno != EINVAL) break;  // EINVAL: the mask is too small for the kernel's; try a larger one
  }
  const unsigned hw = std::thread::hardware_concurrency();
  return hw > 0 ? static_cast<int>(hw) : 1;
}

using Body = std::function<void(int64_t, int64_t)>;

class Pool {
 public:
  /** Runs fn over `chunks` (>= 2) near-equal contiguous chunks of [begin, end) with `threads` set. */
  void run(int64_t begin, int64_t end, int64_t chunks, int threads, const Body& fn) {
    std::unique_lock<std::mutex> lock(dispatch_mu_, std::try_to_lock);
    if (!lock.owns_lock()) {  // another thread's op holds the workers: this one runs serially
      ParallelRegion region;
      fn(begin, end);
      return;
    }
    chunks = grow(chunks);
    // More threads than CPUs: a spinning thread would only hold off the one it waits for (libgomp
    // throttles its spinning likewise).
    const bool spin = threads <= cpus_;
    if (spin != spin_.load(std::memory_order_relaxed)) spin_.store(spin);
    if (chunks < 2) {
      ParallelRegion region;
      fn(begin, end);
      return;
    }
    fn_ = &fn;
    begin_ = begin;
    size_ = (end - begin) / chunks;
    rem_ = (end - begin) % chunks;
    pending_.store(static_cast<int>(chunks - 1));
    ++ticket_;
    for (int64_t k = 1; k < chunks; ++k) {
      Worker& w = *workers_[static_cast<size_t>(k - 1)];
      w.error = nullptr;
      w.ticket.store(ticket_);
      w.waiter.wake();
    }
    std::exception_ptr error;
    {
      ParallelRegion region;
      try {
        run_chunk(0);
      } catch (...) {
        error = std::current_exception();
      }
    }
    done_.await([this] { return pending_.load() == 0; }, spin);
    // The lowest chunk's exception, so which one surfaces does not depend on timing.
    for (int64_t k = 1; k < chunks && !error; ++k) error = workers_[static_cast<size_t>(k - 1)]->error;
    if (error) std::rethrow_exception(error);
  }

  /** Keeps at most n - 1 workers (set_num_threads); waits for an op in flight to finish first. */
  void shrink_to(int n) {
    std::lock_guard<std::mutex> lock(dispatch_mu_);
    while (static_cast<int>(workers_.size()) > n - 1) {
      std::unique_ptr<Worker> w = std::move(workers_.back());
      workers_.pop_back();
      w->stop.store(true);
      w->waiter.wake();
      w->thread.join();
    }
  }

 private:
  struct Worker {
    std::atomic<uint64_t> ticket{0};  // the last job it was given
    std::atomic<bool> stop{false};
    Waiter waiter;
    std::exception_ptr error;  // what its chunk of the current job threw
    std::thread thread;
  };

  /** Makes workers for `chunks` - 1 chunks if it can; returns the chunks it can run. */
  int64_t grow(int64_t chunks) {
    while (static_cast<int64_t>(workers_.size()) < chunks - 1) {
      auto w = std::make_unique<Worker>();
      const int64_t index = static_cast<int64_t>(workers_.size());
      Worker* raw = w.get();
      try {
        w->thread = std::thread([this, raw, index] { work(*raw, index + 1); });
      } catch (const std::system_error& e) {
        // The OS refuses more threads: run with those we have (results do not depend on it).
        if (!warned_) {
          std::fprintf(stderr, "ddp4j: warning: could not start an intra-op thread (%s); using %d\n", e.what(),
                       static_cast<int>(workers_.size()) + 1);
          warned_ = true;
        }
        return static_cast<int64_t>(workers_.size()) + 1;
      }
      workers_.push_back(std::move(w));
    }
    return chunks;
  }

  void run_chunk(int64_t k) {
    const int64_t b = begin_ + k * size_ + (k < rem_ ? k : rem_);
    (*fn_)(b, b + size_ + (k < rem_ ? 1 : 0));
  }

  void work(Worker& w, int64_t chunk) {
    t_in_parallel = true;  // a worker only ever runs op bodies: nested loops run serially
    const std::string name = "ddp4j-intra-" + std::to_string(chunk);  // as top -H and jstack show it (15 chars at most)
    pthread_setname_np(pthread_self(), name.c_str());
    uint64_t seen = 0;
    for (;;) {
      w.waiter.await([&] { return w.ticket.load() != seen || w.stop.load(); }, spin_.load(std::memory_order_relaxed));
      if (w.stop.load()) return;  // only set between ops, so never with a chunk pending
      seen = w.ticket.load();
      try {
        run_chunk(chunk);
      } catch (...) {
        w.error = std::current_exception();
      }
      if (pending_.fetch_sub(1) == 1) done_.wake();
    }
  }

  const int cpus_ = affinity_cpus();
  std::atomic<bool> spin_{true};
  std::mutex dispatch_mu_;
  std::vector<std::unique_ptr<Worker>> workers_;
  bool warned_ = false;
  // The job in flight, written by the caller before it publishes the workers' tickets.
  const Body* fn_ = nullptr;
  int64_t begin_ = 0, size_ = 0, rem_ = 0;
  uint64_t ticket_ = 0;
  std::atomic<int> pending_{0};
  Waiter done_;
};

/** Never destroyed: workers may still be asleep on it when the process exits. */
Pool& pool() {
  static Pool* p = new Pool();
  return *p;
}

/**
 * A positive integer from the environment, or 0 when the variable is unset or empty. A malformed
 * value is ignored with a warning naming it, as PyTorch does for OMP_NUM_THREADS. A comma list
 * ("4,2", OpenMP's threads per nesting level) gives its first entry, the outer level.
 */
int positive_env(const char* name) {
  const char* raw = std::getenv(name);
  if (raw == nullptr) return 0;
  const char* p = raw;
  while (*p == ' ' || *p == '\t') ++p;
  if (*p == '\0') return 0;
  errno = 0;
  char* rest = nullptr;
  const long v = std::strtol(p, &rest, 10);
  while (*rest == ' ' || *rest == '\t') ++rest;
  if (errno == 0 && rest != p && (*rest == '\0' || *rest == ',') && v >= 1 && v <= 1 << 20) {
    return static_cast<int>(v);
  }
  std::fprintf(stderr, "ddp4j: warning: ignoring %s=\"%s\": not a positive integer (set it to the number of threads, "
               "or unset it)\n", name, raw);
  return 0;
}

/** The default thread count (see get_num_threads in parallel.h). */
int default_threads() {
  if (const int omp = positive_env("OMP_NUM_THREADS"); omp > 0) return omp;
  const int local = positive_env("LOCAL_WORLD_SIZE");
  const int n = affinity_cpus() / (local > 0 ? local : 1);
  return n > 0 ? n : 1;
}

/** The thread count; 0 until first read or set. */
std::atomic<int> g_threads{0};

/** OpenBLAS's own threads would multiply ours: each GEMM a pool thread calls runs on that thread alone. */
[[maybe_unused]] const bool g_blas_single_threaded = [] {
  openblas_set_num_threads(1);
  return true;
}();

}  // namespace

int get_num_threads() {
  int n = g_threads.load(std::memory_order_relaxed);
  if (n > 0) return n;
  int expected = 0;
  const int d = default_threads();
  return g_threads.compare_exchange_strong(expected, d) ? d : expected;
}

void set_num_threads(int n) {
  DDP4J_CHECK_ARG(n >= 1, "set_num_threads: the number of threads must be at least 1, got ", n);
  DDP4J_CHECK(!t_in_parallel, IllegalState, "set_num_threads: cannot change the number of threads inside a parallel "
              "region (call it between ops)");
  g_threads.store(n);
  pool().shrink_to(n);
}

bool in_parallel_region() { return t_in_parallel; }

void parallel_for(int64_t begin, int64_t end, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
  if (begin >= end) return;
  if (grain < 1) grain = 1;
  const int64_t n = end - begin;
  int64_t chunks = n / grain;  // so that every chunk holds at least one grain
  const int threads = chunks > 1 && !t_in_parallel ? get_num_threads() : 1;
  if (chunks > threads) chunks = threads;
  if (chunks < 2) {
    ParallelRegion region;
    fn(begin, end);
    return;
  }
  pool().run(begin, end, chunks, threads, fn);
}

double parallel_reduce_blocks(int64_t begin, int64_t end, int64_t block,
                              const std::function<double(int64_t, int64_t)>& partial) {
  if (begin >= end) return 0.0;
  if (block < 1) block = 1;
  const int64_t blocks = (end - begin + block - 1) / block;
  double local[64];
  std::vector<double> heap;
  double* partials = local;
  if (blocks > 64) {
    heap.resize(static_cast<size_t>(blocks));
    partials = heap.data();
  }
  parallel_for(0, blocks, 1, [&](int64_t kb, int64_t ke) {
    for (int64_t k = kb; k < ke; ++k) {
      const int64_t b = begin + k * block;
      partials[k] = partial(b, end - b < block ? end : b + block);
    }
  });
  double sum = 0;
  for (int64_t k = 0; k < blocks; ++k) sum += partials[k];
  return sum;
}

}  // namespace ddp4j
