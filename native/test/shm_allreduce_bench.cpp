// shm_allreduce_bench: all-reduce through the shared-memory transport, ranks as processes (fork),
// float32 SUM. Not a test (ctest does not run it). Prints, per size, the median time per call on
// rank 0 and nccl-tests' bus bandwidth: algbw = bytes / time, busbw = algbw * 2 (n - 1) / n, in
// GB/s (10^9 bytes per second), plus the load average (the figures are noisy on a busy machine).
//
//   shm_allreduce_bench [--ranks N] [--chunk BYTES] [--small BYTES] [--spin US] [--pin none|spread|same]
//                       [--sizes B,B,...] [--iters N] [--segments K (repeat with K fresh segments)]
#include <gloo/rendezvous/file_store.h>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "comm/host/shm/shm_reduce.h"
#include "comm/host/shm/shm_transport.h"

using namespace ddp4j;
using Clock = std::chrono::steady_clock;

int main(int argc, char** argv) {
  int ranks = 2;
  int iters_arg = 0;
  int segments = 1;  // > 1: measure again with a fresh transport (a new segment) each time
  std::string pin = "none";  // none | spread (rank r on cpu r % ncpus) | same (all on cpu 0)
  shm::ShmOptions options;
  options.timeout = std::chrono::seconds(60);
  std::vector<size_t> sizes = {8, 4096, 65536, 1 << 20, 32 << 20};
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--ranks") ranks = std::atoi(argv[i + 1]);
    else if (a == "--chunk") options.chunk_bytes = std::strtoull(argv[i + 1], nullptr, 10);
    else if (a == "--small") options.small_allreduce_bytes = std::strtoull(argv[i + 1], nullptr, 10);
    else if (a == "--iters") iters_arg = std::atoi(argv[i + 1]);
    else if (a == "--spin") options.spin_us = std::atoi(argv[i + 1]);
    else if (a == "--pin") pin = argv[i + 1];
    else if (a == "--segments") segments = std::atoi(argv[i + 1]);
    else if (a == "--sizes") {
      sizes.clear();
      std::stringstream ss(argv[i + 1]);
      std::string item;
      while (std::getline(ss, item, ',')) sizes.push_back(std::strtoull(item.c_str(), nullptr, 10));
    } else {
      std::fprintf(stderr, "unknown option %s\n", a.c_str());
      return 2;
    }
  }
  char tmpl[] = "/tmp/ddp4j-shm-bench-XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  {
    std::ifstream la("/proc/loadavg");
    std::string l1, l5, l15;
    la >> l1 >> l5 >> l15;
    std::printf("# shm all-reduce, %d ranks, float32 SUM, chunk %zu B, kernel %s, pin %s, load average %s %s %s, %ld cpus\n",
                ranks, options.chunk_bytes, shm::reduce_isa(), pin.c_str(), l1.c_str(), l5.c_str(), l15.c_str(),
                sysconf(_SC_NPROCESSORS_ONLN));
    std::printf("%12s %10s %12s %12s %10s %10s\n", "bytes", "count", "median_us", "min_us", "algbw", "busbw");
  }
  std::fflush(stdout);
  std::vector<pid_t> pids;
  for (int r = 0; r < ranks; r++) {
    pid_t pid = fork();
    if (pid == 0) {
      if (pin != "none") {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(pin == "same" ? 0 : r % static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN)), &set);
        sched_setaffinity(0, sizeof(set), &set);
      }
      gloo::rendezvous::FileStore store(dir);
      std::vector<int> globals;
      for (int g = 0; g < ranks; g++) globals.push_back(g);
      for (int seg = 0; seg < segments; seg++) {
      shm::ShmTransport t(store, "bench" + std::to_string(seg), r, ranks, globals, options);
      for (size_t bytes : sizes) {
        const size_t count = std::max<size_t>(1, bytes / 4);
        std::vector<float> buf(count, 1.0f);
        const int iters = iters_arg > 0 ? iters_arg : bytes <= 65536 ? 20000 : bytes <= (1 << 20) ? 500 : 30;
        for (int i = 0; i < std::max(10, iters / 10); i++) t.allreduce(buf.data(), buf.data(), count, DType::Float32, ReduceOp::SUM);
        t.barrier();
        std::vector<double> us(iters);
        for (int i = 0; i < iters; i++) {
          const auto t0 = Clock::now();
          t.allreduce(buf.data(), buf.data(), count, DType::Float32, ReduceOp::SUM);
          us[i] = std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
        }
        t.barrier();
        if (r == 0) {
          std::sort(us.begin(), us.end());
          const double med = us[us.size() / 2];
          const double algbw = count * 4.0 / (med * 1e-6) / 1e9;
          const double busbw = algbw * 2.0 * (ranks - 1) / ranks;
          std::printf("%12zu %10zu %12.2f %12.2f %10.3f %10.3f\n", count * 4, count, med, us[0], algbw, busbw);
          std::fflush(stdout);
        }
      }
      }
      _exit(0);
    }
    pids.push_back(pid);
  }
  int rc = 0;
  for (pid_t p : pids) {
    int st = 0;
    waitpid(p, &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) rc = 1;
  }
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  return rc;
}
