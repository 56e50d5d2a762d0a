// allocator.h: per-device-type allocators. CPU registers in libddp4j; CUDA registers its caching
// allocator when libddp4j_cuda is loaded. Every allocator reports the bytes it has handed out so
// that leak tests can watch native memory.
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
  virtual void deallocate(void* ptr, size_t nbytes, Device device) = 0;
  /** Bytes currently handed out to live storages. */
  virtual int64_t bytes_in_use() const = 0;
};

/** Installs the allocator for a device type (libddp4j_cuda calls this for CUDA). */
void set_allocator(DeviceType type, Allocator* allocator);
/** The allocator for a device type; throws IllegalState naming the missing library if none is registered. */
Allocator& get_allocator(DeviceType type);
/** Bytes in use on a device type, 0 when it has no allocator. */
int64_t native_bytes_in_use(DeviceType type);
/** Number of allocations made on a device type since start (to count per-step allocation). */
int64_t native_allocation_count(DeviceType type);
/** Called by allocators on each allocation (counts it). */
void note_allocation(DeviceType type);

}  // namespace ddp4j
