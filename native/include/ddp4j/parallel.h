// parallel.h: the intra-op thread pool every CPU kernel uses (PyTorch's at::parallel_for and
// torch.set_num_threads / get_num_threads).
//
// Determinism contract: results must not depend on the thread count. A kernel therefore splits
// its work so that each output element is computed inside one `fn` call, in a fixed order, and a
// reduction over many elements goes through parallel_reduce_blocks, whose block boundaries depend
// only on the problem size and the grain, never on the number of threads.
//
// OpenBLAS runs single-threaded inside ddp4j (parallel.cpp sets it when the library loads), so a
// cblas call inside a body uses only its own thread. For a GEMM split over the threads with a
// thread-count-independent result use cpu::sgemm (src/cpu/gemm.h): OpenBLAS's bits change with
// where a product is cut, so cut it by the shape, never by the thread count.
#pragma once
#include <cstdint>
#include <functional>

namespace ddp4j {

/**
 * Elements below which an element-wise loop is not worth splitting (PyTorch's
 * at::internal::GRAIN_SIZE): the grain a cheap per-element kernel passes to parallel_for.
 */
constexpr int64_t kGrainSize = 32768;

/**
 * Threads an op may use, the calling thread included (torch.get_num_threads); at least 1. Until
 * set_num_threads is called: OMP_NUM_THREADS when it is a positive integer (the first entry of a
 * comma list), else the CPUs this process may run on (sched_getaffinity) divided by
 * LOCAL_WORLD_SIZE (1 when unset), at least 1, so the ranks of one host share its cores. A
 * malformed OMP_NUM_THREADS or LOCAL_WORLD_SIZE is ignored with a warning on stderr naming it.
 */
int get_num_threads();

/**
 * Sets the threads ops may use from now on (torch.set_num_threads). Throws
 * Error(InvalidArgument) unless n >= 1, and Error(IllegalState) inside a parallel region. Safe
 * to call from any thread between ops; an op in flight on another thread finishes first.
 */
void set_num_threads(int n);

/** True inside a parallel_for body (nested parallel_for calls then run serially). */
bool in_parallel_region();

/**
 * Calls fn(b, e) over sub-ranges [b, e) that cover [begin, end) exactly once, each of at least
 * `grain` elements (grain < 1 counts as 1), on up to get_num_threads() threads, the calling
 * thread among them; returns when all calls have returned. The ranges are contiguous and at most
 * get_num_threads() (near-equal sizes), so a body may set up per-range scratch once. When fn
 * throws, the exception of the lowest range is rethrown here (after all calls have returned).
 * One call fn(begin, end) on the calling thread when the range is under two grains, when one
 * thread is set, inside a parallel region, or while another thread's parallel_for holds the pool.
 */
void parallel_for(int64_t begin, int64_t end, int64_t grain, const std::function<void(int64_t, int64_t)>& fn);

/**
 * Thread-count-independent reduction: splits [begin, end) into blocks of exactly `block` elements
 * (the last may be shorter; block < 1 counts as 1), calls partial(b, e) for each block (in
 * parallel) and returns 0.0 + the partials summed in block order (0.0 for an empty range). The
 * result is bit-identical for any thread count. Exceptions as parallel_for.
 */
double parallel_reduce_blocks(int64_t begin, int64_t end, int64_t block, const std::function<double(int64_t, int64_t)>& partial);

}  // namespace ddp4j
