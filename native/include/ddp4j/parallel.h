// parallel.h: the intra-op thread pool every CPU kernel uses (PyTorch's at::parallel_for and
// torch.set_num_threads / get_num_threads).
//
// Determinism contract: results must not depend on the thread count. A kernel therefore splits
// its work so that each output element is computed inside one `fn` call, in a fixed order, and a
// reduction over many elements goes through parallel_reduce_blocks, whose block boundaries depend
// only on the problem size and the grain, never on the number of threads.
#pragma once
#include <cstdint>
#include <functional>

namespace ddp4j {

/** Threads an op may use (torch.get_num_threads); at least 1. */
int get_num_threads();

/**
 * Sets the threads ops may use from now on (torch.set_num_threads). n >= 1; throws
 * std::invalid_argument otherwise. Safe to call between ops, not from inside a parallel region.
 */
void set_num_threads(int n);

/** True inside a parallel_for body (nested parallel_for calls then run serially). */
bool in_parallel_region();

/**
 * Calls fn(b, e) over sub-ranges [b, e) that cover [begin, end) exactly once, each of at least
 * `grain` elements (except possibly the last), on up to get_num_threads() threads; returns when
 * all calls have returned. The first exception thrown by fn is rethrown here. Serial when the
 * range is at most one grain, when one thread is set, or when already inside a parallel region.
 */
void parallel_for(int64_t begin, int64_t end, int64_t grain, const std::function<void(int64_t, int64_t)>& fn);

/**
 * Thread-count-independent reduction: splits [begin, end) into blocks of exactly `block` elements
 * (the last may be shorter), calls partial(b, e) for each block (in parallel) and returns the
 * partials summed in block order. The result is bit-identical for any thread count.
 */
double parallel_reduce_blocks(int64_t begin, int64_t end, int64_t block, const std::function<double(int64_t, int64_t)>& partial);

}  // namespace ddp4j
