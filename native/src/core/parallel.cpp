// Serial placeholder of the intra-op API (ddp4j/parallel.h); the thread pool replaces it.
#include "ddp4j/parallel.h"

#include <stdexcept>
#include <string>
#include <vector>

namespace ddp4j {
namespace {
int g_threads = 1;
thread_local bool t_in_parallel = false;
}  // namespace

int get_num_threads() { return g_threads; }

void set_num_threads(int n) {
  if (n < 1) throw std::invalid_argument("set_num_threads: the thread count must be at least 1, got " + std::to_string(n));
  g_threads = n;
}

bool in_parallel_region() { return t_in_parallel; }

void parallel_for(int64_t begin, int64_t end, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
  if (begin < end) fn(begin, end);
}

double parallel_reduce_blocks(int64_t begin, int64_t end, int64_t block, const std::function<double(int64_t, int64_t)>& partial) {
  if (block < 1) block = 1;
  double sum = 0;
  for (int64_t b = begin; b < end; b += block) sum += partial(b, b + block < end ? b + block : end);
  return sum;
}

}  // namespace ddp4j
