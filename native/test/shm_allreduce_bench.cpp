// shm_allreduce_bench: all-reduce on one host, ranks as processes (fork), float32 SUM. Not a test
// (ctest does not run it). Prints, per size, the median time per call on rank 0 and nccl-tests'
// bus bandwidth: algbw = bytes / time, busbw = algbw * 2 (n - 1) / n, in GB/s (10^9 bytes per
// second), plus the load average (the figures are noisy on a busy machine).
//
//   shm_allreduce_bench [--ranks N] [--path transport|group] [--chunk BYTES] [--small BYTES] [--spin US]
//                       [--pin none|spread|same] [--sizes B,B,...] [--iters N] [--reps R]
//                       [--variants "chunk=B small=B spin=US;chunk=..."] [--copy BYTES]
//
// --path transport (default) calls ShmTransport::allreduce itself; --path group goes through a
// ProcessGroupGloo (allreduce, then Work::wait), the path Java's ProcessGroup.allReduce takes, with
// its queue and worker thread. --variants (transport path) runs several option sets, one transport
// each, interleaved size by size and repetition by repetition, so that a before/after comparison
// sees the same machine load; each row is the median over --reps repetitions of each one's
// median. --copy BYTES first prints the one-thread copy rate at that size (memcpy and the
// transport's copy_bytes, GB/s = bytes copied / time, best of 5) and exits when --sizes is empty.
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
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "comm/gloo/process_group.h"
#include "comm/local/shm/shm_reduce.h"
#include "comm/local/shm/shm_transport.h"

using namespace ddp4j;
using Clock = std::chrono::steady_clock;

namespace {

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, sep)) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

/** One thread copying `bytes` between two buffers (touched first), best of 5 runs, in GB/s. */
void print_copy_rate(size_t bytes) {
  std::vector<char> a(bytes, 1), b(bytes, 2);
  double best_memcpy = 0, best_vec = 0;
  for (int i = 0; i < 5; i++) {
    auto t0 = Clock::now();
    std::memcpy(b.data(), a.data(), bytes);
    double s = std::chrono::duration<double>(Clock::now() - t0).count();
    best_memcpy = std::max(best_memcpy, bytes / s / 1e9);
    t0 = Clock::now();
    shm::copy_bytes(a.data(), b.data(), bytes);
    s = std::chrono::duration<double>(Clock::now() - t0).count();
    best_vec = std::max(best_vec, bytes / s / 1e9);
  }
  std::printf("copy bytes=%zu memcpy_gbps=%.3f copy_bytes_gbps=%.3f\n", bytes, best_memcpy, best_vec);
  std::fflush(stdout);
}

shm::ShmOptions parse_variant(const std::string& text, shm::ShmOptions o) {
  for (const std::string& kv : split(text, ' ')) {
    const size_t eq = kv.find('=');
    const std::string k = kv.substr(0, eq), v = eq == std::string::npos ? "" : kv.substr(eq + 1);
    if (k == "chunk") o.chunk_bytes = std::strtoull(v.c_str(), nullptr, 10);
    else if (k == "small") o.small_allreduce_bytes = std::strtoull(v.c_str(), nullptr, 10);
    else if (k == "spin") o.spin_us = std::atoi(v.c_str());
    else if (k == "stores") {
      o.stores = v == "cached" ? shm::ShmOptions::Stores::kCached
                 : v == "streaming" ? shm::ShmOptions::Stores::kStreaming
                                    : shm::ShmOptions::Stores::kAuto;
    }
    else {
      std::fprintf(stderr, "unknown variant key %s (chunk, small, spin, stores)\n", k.c_str());
      std::exit(2);
    }
  }
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  int ranks = 2;
  int iters_arg = 0;
  int reps = 1;
  size_t copy_size = 0;
  std::string path = "transport";
  std::string pin = "none";  // none | spread (rank r on cpu r % ncpus) | same (all on cpu 0)
  std::string variants_arg;
  shm::ShmOptions options;
  options.timeout = std::chrono::seconds(60);
  std::vector<size_t> sizes = {8, 4096, 65536, 1 << 20, 32 << 20};
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--ranks") ranks = std::atoi(argv[i + 1]);
    else if (a == "--chunk") options.chunk_bytes = std::strtoull(argv[i + 1], nullptr, 10);
    else if (a == "--small") options.small_allreduce_bytes = std::strtoull(argv[i + 1], nullptr, 10);
    else if (a == "--iters") iters_arg = std::atoi(argv[i + 1]);
    else if (a == "--reps") reps = std::max(1, std::atoi(argv[i + 1]));
    else if (a == "--spin") options.spin_us = std::atoi(argv[i + 1]);
    else if (a == "--pin") pin = argv[i + 1];
    else if (a == "--path") path = argv[i + 1];
    else if (a == "--variants") variants_arg = argv[i + 1];
    else if (a == "--copy") copy_size = std::strtoull(argv[i + 1], nullptr, 10);
    else if (a == "--sizes") {
      sizes.clear();
      for (const std::string& s : split(argv[i + 1], ',')) sizes.push_back(std::strtoull(s.c_str(), nullptr, 10));
    } else {
      std::fprintf(stderr, "unknown option %s\n", a.c_str());
      return 2;
    }
  }
  if (path != "transport" && path != "group") {
    std::fprintf(stderr, "--path must be transport or group, got %s\n", path.c_str());
    return 2;
  }
  if (copy_size > 0) print_copy_rate(copy_size);
  if (sizes.empty()) return 0;
  std::vector<std::string> names = split(variants_arg, ';');
  std::vector<shm::ShmOptions> variants;
  if (path == "transport") {
    for (const std::string& v : names) variants.push_back(parse_variant(v, options));
  }
  if (path == "group") {
    // Two ways through one group, interleaved: allreduce (queued to the group's worker unless
    // the group runs it inline) and allreduce_bucket with run_inline (on this thread when idle).
    if (names.empty()) names = {"group", "group-inline"};
    for (const std::string& n : names) {
      if (n != "group" && n != "group-inline" && n != "transport") {
        std::fprintf(stderr, "--path group: variants are group, group-inline and transport, got %s\n", n.c_str());
        return 2;
      }
    }
    variants.assign(names.size(), options);
  } else if (variants.empty()) {
    variants = {options};
    names = {"default"};
  }
  const int nv = static_cast<int>(variants.size());

  char tmpl[] = "/tmp/ddp4j-shm-bench-XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  {
    std::ifstream la("/proc/loadavg");
    std::string l1, l5, l15;
    la >> l1 >> l5 >> l15;
    std::printf("# shm all-reduce, %d ranks, float32 SUM, path %s, kernel %s, pin %s, reps %d, load average %s %s %s,"
                " %ld cpus\n",
                ranks, path.c_str(), shm::reduce_isa(), pin.c_str(), reps, l1.c_str(), l5.c_str(), l15.c_str(),
                sysconf(_SC_NPROCESSORS_ONLN));
    std::printf("%-28s %12s %10s %12s %12s %10s %10s\n", "variant", "bytes", "count", "median_us", "min_us", "algbw",
                "busbw");
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
      std::vector<std::unique_ptr<shm::ShmTransport>> transports;
      std::unique_ptr<ProcessGroupGloo> group;
      if (path == "group") {
        GlooOptions go;
        go.timeout = std::chrono::seconds(60);
        group = std::make_unique<ProcessGroupGloo>(store, r, ranks, go);
        // A transport of its own beside the group's, for the "transport" variant.
        transports.push_back(std::make_unique<shm::ShmTransport>(store, "bench", r, ranks, globals, options));
      } else {
        for (int v = 0; v < nv; v++) {
          transports.push_back(
              std::make_unique<shm::ShmTransport>(store, "bench" + std::to_string(v), r, ranks, globals, variants[v]));
        }
      }
      for (size_t bytes : sizes) {
        const size_t count = std::max<size_t>(1, bytes / 4);
        Tensor t = Tensor::empty({static_cast<int64_t>(count)}, DType::Float32);
        float* buf = t.data<float>();
        std::fill(buf, buf + count, 1.0f);
        auto call = [&](int v) {
          if (group && names[v] != "transport") {
            (names[v] == "group" ? group->allreduce(t, ReduceOp::SUM) : group->allreduce_bucket(t, ReduceOp::SUM, true))->wait();
          } else {
            transports[group ? 0 : v]->allreduce(buf, buf, count, DType::Float32, ReduceOp::SUM);
          }
        };
        auto line_up = [&](int v) {
          if (group) group->barrier()->wait();
          else transports[v]->barrier();
        };
        const int iters = iters_arg > 0 ? iters_arg
                          : bytes <= 65536 ? 20000 / reps
                          : bytes <= (1 << 20) ? 1000 / reps
                          : std::max<int>(10, static_cast<int>((size_t{400} << 20) / bytes) / reps);
        std::vector<std::vector<double>> meds(nv), mins(nv);
        for (int rep = 0; rep < reps; rep++) {
          for (int v = 0; v < nv; v++) {
            for (int i = 0; i < std::max(5, iters / 10); i++) call(v);
            line_up(v);
            std::vector<double> us(std::max(1, iters));
            for (double& u : us) {
              const auto t0 = Clock::now();
              call(v);
              u = std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
            }
            line_up(v);
            meds[v].push_back(median(us));
            mins[v].push_back(*std::min_element(us.begin(), us.end()));
          }
        }
        if (std::getenv("SHM_BENCH_CHOICE") != nullptr && r != 0 && !transports.empty() && count * 4 >= shm::kAdaptiveStoreBytes) {
          const shm::ShmStoreChoice& c = transports[0]->store_choice(count * 4);
          std::fprintf(stderr, "rank %d bytes %zu ns/B cached %.3f streaming %.3f\n", r, count * 4, c.cost(false), c.cost(true));
        }
        if (r == 0) {
          for (int v = 0; v < nv; v++) {
            const double med = median(meds[v]);
            const double algbw = count * 4.0 / (med * 1e-6) / 1e9;
            const double busbw = algbw * 2.0 * (ranks - 1) / ranks;
            std::printf("%-28s %12zu %10zu %12.2f %12.2f %10.3f %10.3f", names[v].c_str(), count * 4, count, med,
                        *std::min_element(mins[v].begin(), mins[v].end()), algbw, busbw);
            if (!transports.empty() && count * 4 >= shm::kAdaptiveStoreBytes && (!group || names[v] == "transport")) {
              const shm::ShmStoreChoice& c = transports[group ? 0 : v]->store_choice(count * 4);
              std::printf("  ns/B cached %.3f streaming %.3f", c.cost(false), c.cost(true));
            }
            std::printf("\n");
          }
          std::fflush(stdout);
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
