// allocator.h: per-device-type allocators. CPU registers in libddp4j; CUDA registers its caching
// allocator when libddp4j_cuda is loaded. Every allocator reports the bytes it has handed out so
// that leak tests can watch native memory, and the system allocations it made (cache misses) so
// that tests can check that a steady-state training step allocates nothing.
#pragma once
#include <cstddef>
#include <cstdint>

#include "ddp4j/tensor.h"

namespace ddp4j {

/** Hands out and takes back device memory. Implementations must be thread-safe. */
class Allocator {
 public:
  virtual ~Allocator() = default;
  /** Returns nbytes of memory on device (64-byte aligned); throws Error(OutOfMemory) on failure. */
  virtual void* allocate(size_t nbytes, Device device) = 0;
  /** Takes back a block from allocate (nbytes as passed there). Must not throw. */
  virtual void deallocate(void* ptr, size_t nbytes, Device device) = 0;
  /** Bytes currently handed out to live storages (the sizes asked for, not rounded). */
  virtual int64_t bytes_in_use() const = 0;
  /** Bytes of free blocks kept for reuse (not handed out, not returned to the system). */
  virtual int64_t bytes_cached() const { return 0; }
  /** Returns every cached free block to the system. */
  virtual void empty_cache() {}
  /** Most bytes the cache may hold; blocks freed beyond it go back to the system. */
  virtual int64_t cache_limit() const { return 0; }
  virtual void set_cache_limit(int64_t) {}
};

/** Installs the allocator for a device type (libddp4j_cuda calls this for CUDA). */
void set_allocator(DeviceType type, Allocator* allocator);
/** The allocator for a device type; throws IllegalState naming the missing library if none is registered. */
Allocator& get_allocator(DeviceType type);
/** Bytes in use by live storages on a device type, 0 when it has no allocator. */
int64_t native_bytes_in_use(DeviceType type);
/** Bytes cached (free, kept for reuse) on a device type, 0 when it has no allocator. */
int64_t native_bytes_cached(DeviceType type);
/** Releases a device type's cached blocks to the system (no-op without an allocator). */
void native_empty_cache(DeviceType type);
/**
 * CPU bytes the calling thread allocated less those it freed, whoever allocated them (for leak
 * tests that other threads' frees must not disturb).
 */
int64_t cpu_bytes_net_on_this_thread();
/**
 * Number of real system allocations (malloc / cudaMalloc: cache misses) made on a device type
 * since start. A steady-state training step should add none.
 */
int64_t native_allocation_count(DeviceType type);
/** Called by allocators on each system allocation (counts it). */
void note_allocation(DeviceType type);

/**
 * The block size a caching allocator serves a request of nbytes with: a multiple of 64 bytes up to
 * 512, above that one of eight steps per power of two (at most 12.5% larger). Coarse classes let a
 * block freed by one step be reused for a slightly different size in the next.
 */
size_t round_block_size(size_t nbytes);

/**
 * Parses a byte count: digits with an optional k/m/g suffix (powers of 1024, either case, an
 * optional trailing 'b'). Returns -1 when text is not one.
 */
int64_t parse_byte_count(const char* text);

}  // namespace ddp4j
