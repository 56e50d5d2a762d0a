// ctest: the intra-op thread pool (ddp4j/parallel.h): how parallel_for splits a range, exceptions,
// nesting, resizing, two callers at once, reductions bit-identical for 1..4 threads, and the
// default thread count (OMP_NUM_THREADS, sched_getaffinity / LOCAL_WORLD_SIZE), read by child
// processes of this program so each reads its environment afresh.
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "ddp4j/errors.h"
#include "ddp4j/parallel.h"
#include "test_util.h"

using namespace ddp4j;

namespace {

using Range = std::pair<int64_t, int64_t>;

/** The ranges parallel_for hands out, sorted, and how many distinct threads ran them. */
std::vector<Range> ranges_of(int64_t begin, int64_t end, int64_t grain, size_t* threads_used = nullptr) {
  std::mutex mu;
  std::vector<Range> ranges;
  std::vector<std::thread::id> ids;
  parallel_for(begin, end, grain, [&](int64_t b, int64_t e) {
    std::lock_guard<std::mutex> lock(mu);
    ranges.emplace_back(b, e);
    if (std::find(ids.begin(), ids.end(), std::this_thread::get_id()) == ids.end()) ids.push_back(std::this_thread::get_id());
  });
  std::sort(ranges.begin(), ranges.end());
  if (threads_used != nullptr) *threads_used = ids.size();
  return ranges;
}

void check_split(int threads, int64_t begin, int64_t end, int64_t grain) {
  set_num_threads(threads);
  size_t used = 0;
  const std::vector<Range> r = ranges_of(begin, end, grain, &used);
  if (begin >= end) {
    CHECK(r.empty());
    return;
  }
  // Contiguous cover of [begin, end), each range non-empty.
  CHECK(!r.empty() && r.front().first == begin && r.back().second == end);
  for (size_t i = 0; i < r.size(); ++i) {
    CHECK(r[i].first < r[i].second);
    if (i > 0) CHECK(r[i].first == r[i - 1].second);
  }
  // As many ranges as threads and grains allow, each at least one grain.
  const int64_t g = grain < 1 ? 1 : grain;
  const int64_t expected = std::max<int64_t>(1, std::min<int64_t>(threads, (end - begin) / g));
  CHECK(static_cast<int64_t>(r.size()) == expected);
  if (r.size() > 1) {
    for (const Range& x : r) CHECK(x.second - x.first >= g);
  }
  CHECK(used == r.size());  // one range per thread
}

double reduce_sum(const std::vector<float>& v, int64_t block) {
  return parallel_reduce_blocks(0, static_cast<int64_t>(v.size()), block, [&](int64_t b, int64_t e) {
    double s = 0;
    for (int64_t i = b; i < e; ++i) s += v[static_cast<size_t>(i)];
    return s;
  });
}

/** The output (stdout and stderr) of this program run with `--print-threads` under `env`. */
std::string child_output(const std::string& self, const std::string& env) {
  const std::string cmd = "env -u OMP_NUM_THREADS -u LOCAL_WORLD_SIZE " + env + " '" + self + "' --print-threads 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return "popen failed";
  std::string out;
  char buf[256];
  while (std::fgets(buf, sizeof buf, p) != nullptr) out += buf;
  pclose(p);
  return out;
}

int affinity_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  return sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "--print-threads") == 0) {
    std::printf("threads=%d\n", get_num_threads());
    return 0;
  }

  // Splits: ranges cover the input once, contiguously, at most one per thread, each >= grain.
  for (int threads = 1; threads <= 4; ++threads) {
    check_split(threads, 0, 1000, 1);
    check_split(threads, 5, 1005, 100);
    check_split(threads, 0, 250, 100);  // 2.5 grains: two ranges at most
    check_split(threads, 0, 199, 100);  // under two grains: serial
    check_split(threads, 0, 3, 0);      // grain 0 counts as 1
    check_split(threads, -7, 10, 1);
    check_split(threads, 4, 4, 1);      // empty: no call
    check_split(threads, 0, 1, 1);
  }

  // Exceptions: the lowest range's exception reaches the caller, after all ranges ran; the pool still works.
  set_num_threads(4);
  for (int thrower = 0; thrower < 4; ++thrower) {
    std::atomic<int> calls{0};
    std::string what;
    try {
      parallel_for(0, 400, 1, [&](int64_t b, int64_t e) {
        ++calls;
        if (b / 100 >= thrower) throw std::runtime_error("range " + std::to_string(b / 100));
      });
    } catch (const std::runtime_error& e) {
      what = e.what();
    }
    CHECK(what == "range " + std::to_string(thrower));
    CHECK(calls.load() == 4);
  }
  CHECK(ranges_of(0, 400, 1).size() == 4);

  // Nesting: inside a body in_parallel_region() holds and a nested parallel_for is one call on the same thread.
  CHECK(!in_parallel_region());
  {
    std::atomic<int> nested_calls{0}, bad{0};
    parallel_for(0, 4, 1, [&](int64_t, int64_t) {
      if (!in_parallel_region()) ++bad;
      const std::thread::id me = std::this_thread::get_id();
      parallel_for(0, 1000, 1, [&](int64_t b, int64_t e) {
        ++nested_calls;
        if (b != 0 || e != 1000 || std::this_thread::get_id() != me) ++bad;
      });
      try {
        set_num_threads(2);
        ++bad;  // must not be allowed inside a region
      } catch (const Error& e) {
        if (e.kind() != ErrorKind::IllegalState) ++bad;
      }
    });
    CHECK(bad.load() == 0);
    CHECK(nested_calls.load() == 4);
  }
  CHECK(!in_parallel_region());
  set_num_threads(1);
  {
    bool inside = false;
    parallel_for(0, 10, 1, [&](int64_t, int64_t) { inside = in_parallel_region(); });
    CHECK(inside);  // a serial body is a parallel region too
  }

  // Resizing up and down between ops; bad counts are refused and leave the count alone.
  for (int n : {3, 1, 4, 2, 4, 1, 3}) {
    set_num_threads(n);
    CHECK(get_num_threads() == n);
    CHECK(static_cast<int>(ranges_of(0, 100, 1).size()) == n);
  }
  for (int bad : {0, -1}) {
    try {
      set_num_threads(bad);
      CHECK(false);
    } catch (const Error& e) {
      CHECK(e.kind() == ErrorKind::InvalidArgument);
      CHECK(std::string(e.what()).find("at least 1") != std::string::npos);
    }
  }
  CHECK(get_num_threads() == 3);

  // Many small ops in a row (the pattern of a training step): every element written exactly once.
  {
    std::vector<int> hits(64, 0);
    for (int op = 0; op < 20000; ++op) {
      parallel_for(0, 64, 8, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) ++hits[static_cast<size_t>(i)];
      });
    }
    CHECK(std::all_of(hits.begin(), hits.end(), [](int h) { return h == 20000; }));
  }

  // Two callers at once: one gets the pool, the other runs serially; both see correct results.
  {
    std::atomic<int> wrong{0};
    auto caller = [&] {
      std::vector<int64_t> out(1000);
      for (int op = 0; op < 2000; ++op) {
        parallel_for(0, 1000, 10, [&](int64_t b, int64_t e) {
          for (int64_t i = b; i < e; ++i) out[static_cast<size_t>(i)] = i * op;
        });
        for (int64_t i = 0; i < 1000; ++i) {
          if (out[static_cast<size_t>(i)] != i * op) ++wrong;
        }
      }
    };
    std::thread other(caller);
    caller();
    other.join();
    CHECK(wrong.load() == 0);
  }

  // Reductions: bit-identical for 1..4 threads, equal to summing the blocks in order by hand.
  {
    std::vector<float> v(100003);
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(test::mix(i) % 2000001) / 1000.0f - 1000.0f;
    for (int64_t block : {1, 7, 1000, 65536, 1 << 20}) {
      double by_hand = 0;
      for (size_t b = 0; b < v.size(); b += static_cast<size_t>(block)) {
        double s = 0;
        for (size_t i = b; i < std::min(v.size(), b + static_cast<size_t>(block)); ++i) s += v[i];
        by_hand += s;
      }
      for (int threads = 1; threads <= 4; ++threads) {
        set_num_threads(threads);
        const double got = reduce_sum(v, block);
        CHECK(std::memcmp(&got, &by_hand, sizeof got) == 0);
      }
    }
    CHECK(parallel_reduce_blocks(3, 3, 10, [](int64_t, int64_t) { return 1.0; }) == 0.0);
    // An exception in a block reaches the caller.
    bool threw = false;
    try {
      parallel_reduce_blocks(0, 100, 10, [](int64_t b, int64_t) -> double {
        if (b == 50) throw std::runtime_error("block 5");
        return 1.0;
      });
    } catch (const std::runtime_error& e) {
      threw = std::string(e.what()) == "block 5";
    }
    CHECK(threw);
  }

  // The default: OMP_NUM_THREADS wins; else the affinity CPUs / LOCAL_WORLD_SIZE, at least 1; bad values warn.
  {
    char self[4096];
    const ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    CHECK(len > 0);
    self[len > 0 ? len : 0] = '\0';
    const int cpus = affinity_cpus();
    auto threads_line = [](int n) { return "threads=" + std::to_string(n) + "\n"; };
    CHECK(child_output(self, "") == threads_line(cpus));
    CHECK(child_output(self, "OMP_NUM_THREADS=3 LOCAL_WORLD_SIZE=8") == threads_line(3));
    CHECK(child_output(self, "OMP_NUM_THREADS=5,2") == threads_line(5));
    CHECK(child_output(self, "LOCAL_WORLD_SIZE=2") == threads_line(std::max(1, cpus / 2)));
    CHECK(child_output(self, "LOCAL_WORLD_SIZE=100000") == threads_line(1));
    CHECK(child_output(self, "OMP_NUM_THREADS=") == threads_line(cpus));  // empty counts as unset
    for (const char* bad : {"0", "-2", "two", "3x"}) {
      const std::string out = child_output(self, std::string("OMP_NUM_THREADS=") + bad);
      CHECK(out.find("warning: ignoring OMP_NUM_THREADS=\"" + std::string(bad) + "\"") != std::string::npos);
      CHECK(out.find(threads_line(cpus)) != std::string::npos);
    }
  }

  return test_failures();
}
