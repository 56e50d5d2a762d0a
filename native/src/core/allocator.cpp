#include "ddp4j/allocator.h"

#include <array>
#include <atomic>
#include <cstdlib>
#include <new>

namespace ddp4j {
namespace {

std::array<std::atomic<int64_t>, kNumDeviceTypes> g_allocation_counts{};

/** CPU memory: 64-byte aligned malloc, with a byte counter for leak tests. */
class CpuAllocator final : public Allocator {
 public:
  void* allocate(size_t nbytes, Device) override {
    size_t rounded = ((nbytes + 63) / 64) * 64;
    void* p = rounded == 0 ? nullptr : std::aligned_alloc(64, rounded);
    if (rounded != 0 && p == nullptr) {
      throw Error(ErrorKind::OutOfMemory, detail::concat("cannot allocate ", nbytes, " bytes of CPU memory"));
    }
    in_use_.fetch_add(static_cast<int64_t>(nbytes), std::memory_order_relaxed);
    note_allocation(DeviceType::CPU);
    return p;
  }
  void deallocate(void* ptr, size_t nbytes, Device) override {
    std::free(ptr);
    in_use_.fetch_sub(static_cast<int64_t>(nbytes), std::memory_order_relaxed);
  }
  int64_t bytes_in_use() const override { return in_use_.load(std::memory_order_relaxed); }

 private:
  std::atomic<int64_t> in_use_{0};
};

std::array<std::atomic<Allocator*>, kNumDeviceTypes>& allocators() {
  static CpuAllocator cpu;
  static std::array<std::atomic<Allocator*>, kNumDeviceTypes> table{&cpu, nullptr};
  return table;
}

}  // namespace

void set_allocator(DeviceType type, Allocator* allocator) {
  allocators()[static_cast<int>(type)].store(allocator);
}

Allocator& get_allocator(DeviceType type) {
  Allocator* a = allocators()[static_cast<int>(type)].load();
  DDP4J_CHECK(a != nullptr, IllegalState,
              "no allocator for CUDA: the CUDA library libddp4j_cuda.so is not loaded (no GPU build, or no GPU here)");
  return *a;
}

int64_t native_bytes_in_use(DeviceType type) {
  Allocator* a = allocators()[static_cast<int>(type)].load();
  return a == nullptr ? 0 : a->bytes_in_use();
}

int64_t native_allocation_count(DeviceType type) { return g_allocation_counts[static_cast<int>(type)].load(); }

void note_allocation(DeviceType type) {
  g_allocation_counts[static_cast<int>(type)].fetch_add(1, std::memory_order_relaxed);
}

}  // namespace ddp4j
