// gloo_test_ranks.h: ranks of a ProcessGroupGloo as threads of one test process, rendezvous
// through Gloo's in-memory HashStore.
#pragma once
#include <gloo/rendezvous/hash_store.h>

#include <cstdio>
#include <exception>
#include <functional>
#include <thread>
#include <vector>

#include "comm/gloo/process_group.h"
#include "ddp4j/process_group.h"
#include "test_util.h"

namespace ddp4j::test {

/** Runs body(rank, group) on `world` threads, each with its own group over one HashStore. */
inline void run_ranks(int world, GlooOptions options, const std::function<void(int, ProcessGroup&)>& body) {
  gloo::rendezvous::HashStore store;
  std::vector<std::thread> threads;
  for (int r = 0; r < world; r++) {
    threads.emplace_back([&, r] {
      try {
        ProcessGroupGloo group(store, r, world, options);
        body(r, group);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "rank %d: unexpected exception: %s\n", r, e.what());
        ++failure_count();
      }
    });
  }
  for (auto& t : threads) t.join();
}

/** A float32 tensor of n elements, all `value`. */
inline Tensor filled(int64_t n, float value) {
  Tensor t = Tensor::empty({n}, DType::Float32);
  for (int64_t i = 0; i < n; i++) t.data<float>()[i] = value;
  return t;
}

}  // namespace ddp4j::test
