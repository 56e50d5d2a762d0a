// ctest: the shared-memory transport with 1, 2, 3 and 4 ranks as processes (fork), each building its
// transport through a Gloo FileStore in a temporary folder.
//  - every op and dtype (allReduce and reduce) against a plain reference at 0, 1, an odd count and several MiB (beyond
//    one chunk), in place and not; every rank's results hashed and compared across ranks;
//    small chunks force the pipelined path at odd sizes; broadcast from every root; allGather
//    (also in place); barrier; ranks that disagree on a collective, or on the segment's size,
//    fail at once instead of hanging;
//  - kill -9 of a peer during a large allReduce: the survivors throw Error(Distributed) naming
//    the dead rank, well within the timeout; a peer that never calls: Error(Timeout) within the
//    bound, and the transport then fails at once;
//  - every store kind into the segment (cached, non-temporal, chosen by measurement), at the
//    element counts around each size threshold (kAdaptiveStoreBytes, the one-step path's 64 KiB,
//    the 512 KiB chunk), odd counts, every dtype and op; ShmStoreChoice tries both kinds and keeps
//    the cheaper, and follows a change;
//  - nothing is left in /dev/shm.
#include <gloo/rendezvous/file_store.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "comm/local/shm/shm_transport.h"
#include "ddp4j/errors.h"
#include "test_util.h"

using ddp4j::test::mix;

using namespace ddp4j;
using shm::ShmOptions;
using shm::ShmTransport;
using Clock = std::chrono::steady_clock;

namespace {

std::string g_dir;  // the current run's temporary folder (FileStore and result files)

/**
 * Forks `world` ranks; rank r builds its transport (global ranks `globals`) and runs body(r, t).
 * A child exits 0 when its checks passed. `control(pids)` runs in the parent after the fork (e.g.
 * to kill one child); returns each child's exit status (or 128 + signal).
 */
std::vector<int> run_ranks(int world, ShmOptions options, const std::function<void(int, ShmTransport&)>& body,
                           std::vector<int> globals = {}, const std::function<void(std::vector<pid_t>&)>& control = {},
                           const std::vector<int>& wait_order = {}) {
  char tmpl[] = "/tmp/ddp4j-shm-test-XXXXXX";
  g_dir = mkdtemp(tmpl);
  if (globals.empty()) {
    for (int r = 0; r < world; r++) globals.push_back(r);
  }
  std::fflush(stdout);
  std::fflush(stderr);
  std::vector<pid_t> pids;
  for (int r = 0; r < world; r++) {
    pid_t pid = fork();
    if (pid == 0) {
      ddp4j::test::failure_count() = 0;  // this child's own checks only
      try {
        gloo::rendezvous::FileStore store(g_dir);
        ShmTransport t(store, "test", r, world, globals, options);
        body(r, t);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "rank %d: unexpected exception: %s\n", r, e.what());
        ++ddp4j::test::failure_count();
      }
      std::fflush(stdout);
      std::fflush(stderr);
      _exit(test_failures());
    }
    pids.push_back(pid);
  }
  if (control) control(pids);
  std::vector<int> status(world, -1);
  std::vector<int> order = wait_order;
  if (order.empty()) {
    for (int r = 0; r < world; r++) order.push_back(r);
  }
  for (int r : order) {
    int st = 0;
    waitpid(pids[r], &st, 0);
    status[r] = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  }
  return status;
}

void cleanup_dir() {
  std::error_code ec;
  std::filesystem::remove_all(g_dir, ec);
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void write_file(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

// ---- inputs and the plain reference --------------------------------------------------------------

template <class T>
T input_value(int rank, size_t i, ReduceOp op, uint64_t seed) {
  const uint64_t h = mix(seed * 7919 + rank * 1000003ULL + i);
  if constexpr (std::is_same<T, float>::value) {
    const float u = static_cast<float>(h >> 40) / 16777216.0f;
    if (op == ReduceOp::PRODUCT) return 0.75f + 0.5f * u;
    return (2 * u - 1) * static_cast<float>(1 << (h & 15));  // magnitudes differ: sums depend on order
  } else {
    return static_cast<int64_t>(h);
  }
}

template <class T>
T combine(T a, T b, ReduceOp op) {
  if constexpr (std::is_same<T, float>::value) {
    switch (op) {
      case ReduceOp::PRODUCT: return a * b;
      case ReduceOp::MIN: return b < a ? b : a;
      case ReduceOp::MAX: return b > a ? b : a;
      default: return a + b;
    }
  } else {
    switch (op) {
      case ReduceOp::PRODUCT: return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
      case ReduceOp::MIN: return b < a ? b : a;
      case ReduceOp::MAX: return b > a ? b : a;
      default: return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
    }
  }
}

uint64_t fnv(const void* p, size_t n, uint64_t h = 1469598103934665603ULL) {
  const unsigned char* b = static_cast<const unsigned char*>(p);
  for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ULL;
  return h;
}

/** Element i of the reduction over every rank's input, in rank order, as the transport must give it. */
template <class T>
T reference(size_t i, int world, ReduceOp op, uint64_t seed) {
  T a = input_value<T>(0, i, op, seed);
  for (int r = 1; r < world; r++) a = combine(a, input_value<T>(r, i, op, seed), op);
  if constexpr (std::is_same<T, float>::value) {
    if (op == ReduceOp::AVG) a *= 1.0f / static_cast<float>(world);
  }
  return a;
}

template <class T>
void check_allreduce(ShmTransport& t, int rank, int world, DType dtype, ReduceOp op, size_t count, bool in_place,
                     uint64_t seed, uint64_t& hash) {
  std::vector<T> in(count), out(count, T(0)), expected(count);
  for (size_t i = 0; i < count; i++) in[i] = input_value<T>(rank, i, op, seed);
  for (size_t i = 0; i < count; i++) expected[i] = reference<T>(i, world, op, seed);
  if (in_place) {
    t.allreduce(in.data(), in.data(), count, dtype, op);
    out = in;
  } else {
    t.allreduce(in.data(), out.data(), count, dtype, op);
  }
  const bool ok = std::memcmp(out.data(), expected.data(), count * sizeof(T)) == 0;
  if (!ok) {
    std::fprintf(stderr, "rank %d/%d: allReduce %s %s count %zu%s differs from the reference\n", rank, world,
                 dtype_name(dtype), reduce_op_name(op), count, in_place ? " (in place)" : "");
  }
  CHECK(ok);
  hash = fnv(out.data(), count * sizeof(T), hash);
}

/** reduce to `root`: the root gets the reference, the others' output stays as it was. */
template <class T>
void check_reduce(ShmTransport& t, int rank, int world, DType dtype, ReduceOp op, size_t count, int root,
                  uint64_t seed) {
  std::vector<T> in(count), out(count, T(42)), expected(count);
  for (size_t i = 0; i < count; i++) in[i] = input_value<T>(rank, i, op, seed);
  for (size_t i = 0; i < count; i++) expected[i] = rank == root ? reference<T>(i, world, op, seed) : T(42);
  t.reduce(in.data(), out.data(), count, dtype, op, root);
  const bool ok = std::memcmp(out.data(), expected.data(), count * sizeof(T)) == 0;
  if (!ok) {
    std::fprintf(stderr, "rank %d/%d: reduce %s %s count %zu to %d differs from the reference\n", rank, world,
                 dtype_name(dtype), reduce_op_name(op), count, root);
  }
  CHECK(ok);
}

/** Every op, dtype and size; writes the hash of all results to <dir>/hash.<rank>. */
void all_ops(int rank, ShmTransport& t, const std::vector<size_t>& counts) {
  const int world = t.local_size();
  uint64_t hash = fnv("", 0);
  uint64_t seed = 1;
  for (size_t count : counts) {
    for (ReduceOp op : {ReduceOp::SUM, ReduceOp::AVG, ReduceOp::PRODUCT, ReduceOp::MIN, ReduceOp::MAX}) {
      check_allreduce<float>(t, rank, world, DType::Float32, op, count, count % 2 == 1, seed++, hash);
      if (op != ReduceOp::AVG) {
        check_allreduce<int64_t>(t, rank, world, DType::Int64, op, count, count % 2 == 0, seed++, hash);
      }
    }
    for (int root = 0; root < world; root++) {
      check_reduce<float>(t, rank, world, DType::Float32, root == 1 ? ReduceOp::AVG : ReduceOp::SUM, count, root,
                          seed++);
      check_reduce<int64_t>(t, rank, world, DType::Int64, ReduceOp::MAX, count, root, seed++);
    }
    const size_t bytes = count * 4 + (count > 0 ? 3 : 0);  // odd byte counts too
    // broadcast from every root
    for (int root = 0; root < world; root++) {
      std::vector<unsigned char> buf(bytes);
      for (size_t i = 0; i < bytes; i++) buf[i] = static_cast<unsigned char>(mix(rank * 31 + root + i * 7));
      t.broadcast(buf.data(), bytes, root);
      bool ok = true;
      for (size_t i = 0; i < bytes && ok; i++) ok = buf[i] == static_cast<unsigned char>(mix(root * 31 + root + i * 7));
      if (!ok) std::fprintf(stderr, "rank %d/%d: broadcast of %zu bytes from %d differs\n", rank, world, bytes, root);
      CHECK(ok);
    }
    // allGather, separate buffers, then in place (input = own block of the output)
    for (int in_place = 0; in_place < 2; in_place++) {
      std::vector<unsigned char> in(bytes), out(bytes * world, 0);
      for (size_t i = 0; i < bytes; i++) in[i] = static_cast<unsigned char>(mix(rank * 131 + i));
      if (in_place) {
        std::memcpy(out.data() + rank * bytes, in.data(), bytes);
        t.allgather(out.data() + rank * bytes, out.data(), bytes);
      } else {
        t.allgather(in.data(), out.data(), bytes);
      }
      bool ok = true;
      for (int r = 0; r < world; r++) {
        for (size_t i = 0; i < bytes && ok; i++) ok = out[r * bytes + i] == static_cast<unsigned char>(mix(r * 131 + i));
      }
      if (!ok) std::fprintf(stderr, "rank %d/%d: allGather of %zu bytes differs\n", rank, world, bytes);
      CHECK(ok);
    }
    t.barrier();
  }
  char text[32];
  std::snprintf(text, sizeof(text), "%016llx", static_cast<unsigned long long>(hash));
  write_file(g_dir + "/hash." + std::to_string(rank), text);
}

void check_run(const char* what, int world, const std::vector<int>& status) {
  bool ok = true;
  for (int s : status) ok = ok && s == 0;
  std::string first = read_file(g_dir + "/hash.0");
  for (int r = 1; r < world; r++) {
    if (read_file(g_dir + "/hash." + std::to_string(r)) != first) {
      std::fprintf(stderr, "%s: rank %d's results are not bit-identical to rank 0's\n", what, r);
      ok = false;
    }
  }
  if (first.empty()) ok = false;
  std::printf("%s: %s\n", what, ok ? "ok" : "FAILED");
  CHECK(ok);
}

std::set<std::string> dev_shm() {
  std::set<std::string> names;
  std::error_code ec;
  for (auto& e : std::filesystem::directory_iterator("/dev/shm", ec)) names.insert(e.path().filename().string());
  return names;
}

// ---- failures ------------------------------------------------------------------------------------

/** Records "<kind> <monotonic ns>\n<message>" of the error a rank caught. */
void record_error(int rank, const Error& e) {
  const long long ns = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
  write_file(g_dir + "/error." + std::to_string(rank),
             std::to_string(static_cast<int>(e.kind())) + " " + std::to_string(ns) + "\n" + e.what());
}

// Every survivor names the killed rank, also one that learns of the death through another
// survivor's abort of the segment rather than from the victim's process.
void test_kill_during_allreduce(int world, int victim) {
  ShmOptions options;
  options.timeout = std::chrono::seconds(10);
  std::vector<int> globals;
  for (int r = 0; r < world; r++) globals.push_back(5 + 2 * r);
  const std::string victim_name = "rank " + std::to_string(globals[victim]) + " (pid";
  long long kill_ns = 0;
  std::vector<int> order;  // reap the victim last: while the survivors run it is an unreaped zombie
  for (int r = 0; r < world; r++) {
    if (r != victim) order.push_back(r);
  }
  order.push_back(victim);
  auto status = run_ranks(
      world, options,
      [&](int rank, ShmTransport& t) {
        const size_t n = 8 << 20;  // 32 MiB float32: many chunks per call
        std::vector<float> buf(n, 1.0f);
        write_file(g_dir + "/ready." + std::to_string(rank), "1");
        try {
          for (int i = 0; i < 100000; i++) t.allreduce(buf.data(), buf.data(), n, DType::Float32, ReduceOp::SUM);
          CHECK(false);  // unreachable: the victim is killed
        } catch (const Error& e) {
          record_error(rank, e);
          // Broken from now on: the next call fails at once.
          const auto t0 = Clock::now();
          try {
            t.barrier();
            CHECK(false);
          } catch (const Error& again) {
            CHECK(again.kind() == ErrorKind::Distributed);
          }
          CHECK(Clock::now() - t0 < std::chrono::milliseconds(50));
        }
      },
      globals,
      [&](std::vector<pid_t>& pids) {
        // Wait until every rank is inside the loop, then a little more: mid-allReduce.
        for (int i = 0; i < 2000; i++) {
          bool all = true;
          for (int r = 0; r < world; r++) all = all && std::filesystem::exists(g_dir + "/ready." + std::to_string(r));
          if (all) break;
          std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        kill_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
        kill(pids[victim], SIGKILL);
      },
      order);
  CHECK(status[victim] == 128 + SIGKILL);
  for (int r = 0; r < world; r++) {
    if (r == victim) continue;
    CHECK(status[r] == 0);
    std::string text = read_file(g_dir + "/error." + std::to_string(r));
    int kind = -1;
    long long ns = 0;
    std::sscanf(text.c_str(), "%d %lld", &kind, &ns);
    const std::string message = text.substr(text.find('\n') + 1);
    const double after_ms = (ns - kill_ns) / 1e6;
    std::printf("kill -9 (%d ranks, rank %d killed): rank %d threw %.1f ms after the kill: %s\n", world,
                globals[victim], globals[r], after_ms, message.c_str());
    CHECK(kind == static_cast<int>(ErrorKind::PeerLost));
    CHECK(message.find(victim_name) != std::string::npos);
    CHECK(message.find("died during allReduce(SUM) of 8388608 float32 elements") != std::string::npos);
    CHECK(after_ms < 2000);  // well within the 10 s timeout
  }
  cleanup_dir();
}

void test_timeout() {
  ShmOptions options;
  options.timeout = std::chrono::milliseconds(500);
  auto status = run_ranks(2, options, [&](int rank, ShmTransport& t) {
    if (rank == 1) {  // alive but never calls
      std::this_thread::sleep_for(std::chrono::milliseconds(1500));
      return;
    }
    std::vector<float> buf(1001, 1.0f);
    const auto t0 = Clock::now();
    try {
      t.allreduce(buf.data(), buf.data(), buf.size(), DType::Float32, ReduceOp::SUM);
      CHECK(false);
    } catch (const Error& e) {
      const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
      std::printf("timeout: threw after %.0f ms: %s\n", ms, e.what());
      CHECK(e.kind() == ErrorKind::Timeout);
      CHECK(ms >= 490 && ms < 1000);
      CHECK(std::string(e.what()).find("allReduce(SUM) of 1001 float32 elements timed out after") != std::string::npos);
      CHECK(std::string(e.what()).find("rank 1 (pid") != std::string::npos);
      CHECK(e.facts().peer == 1 && e.facts().peer_pid > 0 && e.facts().timeout_ms > 0);
      CHECK(e.facts().transport == "shared memory");
    }
    const auto t1 = Clock::now();
    try {
      t.barrier();
      CHECK(false);
    } catch (const Error& e) {
      CHECK(e.kind() == ErrorKind::Distributed);
      CHECK(std::string(e.what()).find("unusable after an earlier failure") != std::string::npos);
    }
    CHECK(Clock::now() - t1 < std::chrono::milliseconds(50));
  });
  CHECK(status[0] == 0 && status[1] == 0);
  cleanup_dir();
}

void test_disagreement() {
  ShmOptions options;
  options.timeout = std::chrono::seconds(10);
  auto status = run_ranks(2, options, [&](int rank, ShmTransport& t) {
    std::vector<float> buf(10 + rank, 1.0f);
    const auto t0 = Clock::now();
    try {
      t.allreduce(buf.data(), buf.data(), buf.size(), DType::Float32, ReduceOp::SUM);
      CHECK(false);
    } catch (const Error& e) {
      if (rank == 0) std::printf("disagreement: %s\n", e.what());
      CHECK(e.kind() == ErrorKind::Mismatch);
      CHECK(std::string(e.what()).find("disagree") != std::string::npos ||
            std::string(e.what()).find("abandoned") != std::string::npos);
    }
    CHECK(Clock::now() - t0 < std::chrono::seconds(2));
  });
  CHECK(status[0] == 0 && status[1] == 0);
  cleanup_dir();
}

/**
 * Ranks whose calls agree in op, dtype and size but not in the caller's fingerprint (a DDP bucket
 * on rank 0, a plain all-reduce on rank 1, as a process group passes them): both fail at once,
 * each naming its own call first and the peer's after it, at one element (one step) and beyond
 * one chunk (pipelined); matching fingerprints still reduce.
 */
void test_fingerprint_mismatch() {
  ShmOptions options;
  options.timeout = std::chrono::seconds(10);
  options.chunk_bytes = 4096;
  for (size_t n : {size_t{1}, size_t{5000}}) {
    auto status = run_ranks(2, options, [&](int rank, ShmTransport& t) {
      Fingerprint fp;
      fp.seq = 57;
      fp.kind = Fingerprint::kAllReduce;
      fp.arg = static_cast<uint32_t>(ReduceOp::AVG);
      fp.dtype = static_cast<uint32_t>(DType::Float32);
      fp.numel = n;
      std::vector<float> buf(n, static_cast<float>(rank + 1));
      t.allreduce(buf.data(), buf.data(), n, DType::Float32, ReduceOp::AVG, &fp);  // same fingerprint: fine
      CHECK_NEAR(buf[n - 1], 1.5, 0.0);
      fp.seq = 58;
      if (rank == 0) {
        fp.bucket = 1;
        fp.buckets = 3;
      }
      const auto t0 = Clock::now();
      try {
        t.allreduce(buf.data(), buf.data(), n, DType::Float32, ReduceOp::AVG, &fp);
        CHECK(false);
      } catch (const Error& e) {
        const std::string m = e.what();
        if (rank == 0) std::printf("fingerprint mismatch (%zu): %s\n", n, m.c_str());
        CHECK(e.kind() == ErrorKind::Mismatch);
        CHECK(e.facts().peer == 1 - rank && e.facts().mine.present && e.facts().theirs.present);
        const std::string count = n == 1 ? "1 float32 element" : "5,000 float32 elements";
        const std::string bucket = "allReduce(AVG) of " + count + " (#58, DDP bucket 2 of 3)";
        const std::string plain = "allReduce(AVG) of " + count + " (#58)";
        CHECK(m.rfind((rank == 0 ? bucket : plain) + " on rank " + std::to_string(rank) +
                          ": a peer called a different collective: rank " + std::to_string(1 - rank),
                      0) == 0);
        CHECK(m.find(" called " + (rank == 0 ? plain : bucket)) != std::string::npos);
      }
      CHECK(Clock::now() - t0 < std::chrono::seconds(2));
    });
    CHECK(status[0] == 0 && status[1] == 0);
    cleanup_dir();
  }
}

/** Ranks that pass different chunk sizes (segment sizes) all fail fast with Error(Distributed). */
void test_segment_disagreement() {
  char tmpl[] = "/tmp/ddp4j-shm-test-XXXXXX";
  g_dir = mkdtemp(tmpl);
  std::vector<pid_t> pids;
  for (int r = 0; r < 3; r++) {
    pid_t pid = fork();
    if (pid == 0) {
      ddp4j::test::failure_count() = 0;
      ShmOptions o;
      o.timeout = std::chrono::seconds(10);
      o.chunk_bytes = r == 2 ? 8192 : 4096;
      const auto t0 = Clock::now();
      try {
        gloo::rendezvous::FileStore store(g_dir);
        ShmTransport t(store, "seg", r, 3, {0, 1, 2}, o);
        CHECK(false);
      } catch (const Error& e) {
        if (r == 0) std::printf("segment disagreement: %s\n", e.what());
        CHECK(e.kind() == ErrorKind::Distributed);
        CHECK(std::string(e.what()).find("different chunk sizes") != std::string::npos);
      }
      CHECK(Clock::now() - t0 < std::chrono::seconds(3));
      std::fflush(stdout);
      _exit(test_failures());
    }
    pids.push_back(pid);
  }
  for (pid_t p : pids) {
    int st = 0;
    waitpid(p, &st, 0);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  }
  cleanup_dir();
}

}  // namespace

/** ShmStoreChoice: two calls of each kind first, then the cheaper, the other re-tried every period. */
void test_store_choice() {
  shm::ShmStoreChoice c;
  // Cached costs 1 ns/B, streaming 3: after the tries it stays cached except for the re-tries.
  auto cost = [](bool streamed, bool slow_mode) { return slow_mode ? (streamed ? 1.0 : 6.0) : (streamed ? 3.0 : 1.0); };
  std::vector<bool> kinds;
  for (int i = 0; i < 4; i++) {
    const bool s = c.next_streams();
    kinds.push_back(s);
    c.record(s, cost(s, false));
  }
  CHECK(kinds == std::vector<bool>({false, false, true, true}));
  int streamed = 0;
  const uint32_t period = shm::ShmStoreChoice::kExplorePeriod;
  for (uint32_t i = 0; i < 4 * period; i++) {
    const bool s = c.next_streams();
    streamed += s;
    c.record(s, cost(s, false));
  }
  // Only the re-tries: every kEarlyPeriod calls at first, then every kExplorePeriod.
  using C = shm::ShmStoreChoice;
  CHECK(streamed == static_cast<int>((C::kEarlyCalls / C::kEarlyPeriod +
                                      (4 * period - C::kEarlyCalls) / C::kExplorePeriod) * C::kTryCalls));
  // The machine changes mode (cached now 6 ns/B): the choice moves to streaming within one call.
  bool s = c.next_streams();
  CHECK(!s);
  c.record(s, cost(s, true));
  int cached_after = 0;
  for (uint32_t i = 0; i < 2 * period; i++) {
    s = c.next_streams();
    cached_after += !s;
    c.record(s, cost(s, true));
  }
  CHECK(cached_after <= static_cast<int>(2 * shm::ShmStoreChoice::kTryCalls) + 1);
  CHECK(c.cost(true) == 1.0);
  std::printf("store choice: %s\n", test_failures() == 0 ? "ok" : "FAILED");
}

int main() {
  const auto start = Clock::now();
  const std::set<std::string> shm_before = dev_shm();
  const size_t big = (3 << 20) / 4 + 333;  // > 3 MiB of float32, 6 MiB of int64: several 512 KiB chunks, odd

  for (int world : {1, 2, 3, 4}) {
    auto status = run_ranks(world, ShmOptions{}, [&](int rank, ShmTransport& t) { all_ops(rank, t, {0, 1, 1001, big}); });
    check_run(("all ops, " + std::to_string(world) + " ranks").c_str(), world, status);
    cleanup_dir();
  }
  {
    // Tiny chunks and no one-step path: odd sizes run pipelined with uneven slices.
    ShmOptions small;
    small.chunk_bytes = 4096;
    small.small_allreduce_bytes = 0;
    auto status = run_ranks(3, small, [&](int rank, ShmTransport& t) { all_ops(rank, t, {1, 1001, 5000}); });
    check_run("all ops, 3 ranks, 4 KiB chunks", 3, status);
    cleanup_dir();
  }
  {
    // Each store kind into the segment, at the counts on both sides of every threshold: float32
    // 1023-1025 (4 KiB, where the store choice starts), 16383-16385 (64 KiB, the one-step path's
    // end), 131071-131073 (one 512 KiB chunk), 262143-262145 (two) and odd counts past them; int64 elements are twice as
    // large, so the same counts put them on other sides. kAuto calls each size class often enough
    // here to run both kinds.
    const std::vector<size_t> counts = {1023, 1024, 1025, 16383, 16384, 16385, 131071, 131072, 131073,
                                       262143, 262144, 262145, 300001, 1048577};
    for (auto stores : {ShmOptions::Stores::kCached, ShmOptions::Stores::kStreaming, ShmOptions::Stores::kAuto}) {
      ShmOptions o;
      o.stores = stores;
      const char* name = stores == ShmOptions::Stores::kCached      ? "cached"
                         : stores == ShmOptions::Stores::kStreaming ? "streaming"
                                                                    : "auto";
      auto status = run_ranks(2, o, [&](int rank, ShmTransport& t) { all_ops(rank, t, counts); });
      check_run((std::string("all ops, 2 ranks, ") + name + " stores, sizes around the thresholds").c_str(), 2, status);
      cleanup_dir();
    }
    // Non-temporal stores with uneven cache-line slices: 3 ranks, 4 KiB chunks, no one-step path.
    ShmOptions o;
    o.stores = ShmOptions::Stores::kStreaming;
    o.chunk_bytes = 4096;
    o.small_allreduce_bytes = 0;
    auto status = run_ranks(3, o, [&](int rank, ShmTransport& t) { all_ops(rank, t, {1, 1001, 1024, 5000}); });
    check_run("all ops, 3 ranks, streaming stores, 4 KiB chunks", 3, status);
    cleanup_dir();
  }
  test_store_choice();
  test_disagreement();
  test_fingerprint_mismatch();
  test_segment_disagreement();
  test_timeout();
  // the killed rank first, in the middle and last
  for (const auto& [world, victim] : std::vector<std::pair<int, int>>{{2, 0}, {2, 1}, {3, 0}, {3, 1}, {3, 2},
                                                                      {4, 0}, {4, 2}, {4, 3}}) {
    test_kill_during_allreduce(world, victim);
  }

  const std::set<std::string> shm_after = dev_shm();
  for (const auto& name : shm_after) {
    if (!shm_before.count(name)) {
      std::fprintf(stderr, "left in /dev/shm: %s\n", name.c_str());
      CHECK(false);
    }
  }
  std::printf("shm_transport_test: %.1f s\n", std::chrono::duration<double>(Clock::now() - start).count());
  return test_failures();
}
