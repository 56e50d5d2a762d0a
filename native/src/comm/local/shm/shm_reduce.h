// shm_reduce.h: the element-wise reductions of the shared-memory all-reduce, vectorised (AVX-512,
// AVX2 or scalar, picked once at run time).
#pragma once
#include <cstddef>

#include "ddp4j/process_group.h"
#include "ddp4j/tensor.h"

namespace ddp4j::shm {

/**
 * out[i] = ((srcs[0][i] op srcs[1][i]) op srcs[2][i]) ... op srcs[nsrc-1][i] for i < count.
 *
 * Sources are combined strictly left to right, with the same rule at every element whichever code
 * path runs it, so any process of a host that reduces the same sources gets the same bits.
 * MIN/MAX follow the Gloo path's rule (`b < a ? b : a`, `b > a ? b : a` with a the running value).
 * AVG is SUM followed by a multiplication by 1.0f / nsrc (floating dtypes only), as the Gloo path does.
 * int64 arithmetic wraps on overflow. bfloat16 and float16 are combined in float32 (each source
 * widened exactly, the float32 rules above) and rounded once to the 16-bit type at the end, as
 * DeepSpeed's CPU all-reduce does: the result is the float32 reduction of the widened sources,
 * rounded once (half.h's rounding), whichever code path runs.
 *
 * When `out2` is not null the result is also stored there (the shared-memory all-reduce writes its
 * slice to the segment and to the caller's buffer in one pass). `out` and `out2` may be a source
 * (same positions: each element is read from every source before it is stored), but must not
 * otherwise overlap the sources.
 *
 * With `stream_out`, `out` is written with non-temporal stores (the data goes to memory, not into
 * this core's cache) when it is 64-byte aligned, with ordinary stores otherwise; they are fenced
 * (sfence) before the function returns, so a flag stored after it publishes them. The shared-memory
 * transport uses it for its segment slots when that is faster (ShmOptions::stores). `out2` always
 * takes ordinary stores.
 *
 * dtype: Float32, Int64, BFloat16 or Float16 (counts are in elements). nsrc >= 1. Throws
 * Error(InvalidArgument) for AVG on int64 or an unknown op.
 */
void reduce_sources(void* out, const void* const* srcs, int nsrc, size_t count, DType dtype, ReduceOp op,
                    void* out2 = nullptr, bool stream_out = false);

/**
 * Copies `bytes` bytes (non-overlapping) with plain vector loads and stores. Why not memcpy: glibc
 * copies 4 KiB .. ~1 MiB with `rep movsb`, which on some CPUs (AMD Zen 3 here, under KVM) runs
 * several times slower when source and destination sit at unfavourable relative offsets, as
 * private buffers and segment slots do: a 32 MiB all-reduce in 256 KiB chunks took 46 ms with
 * memcpy and 8 ms without rep movsb. With `stream` and a 64-byte aligned `dst`, the whole 64-byte
 * blocks go with non-temporal stores, fenced before it returns (as reduce_sources' stream_out).
 */
void copy_bytes(void* dst, const void* src, size_t bytes, bool stream = false);

/** Which kernel reduce_sources uses on this machine: "avx512", "avx2" or "scalar". */
const char* reduce_isa();

/** Forces the scalar kernels (true) or the run-time choice (false); for tests that compare paths. */
void force_scalar_reduce(bool scalar);

}  // namespace ddp4j::shm
