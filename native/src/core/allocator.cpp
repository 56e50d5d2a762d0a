#include "ddp4j/allocator.h"

#include "core/large_block_pool.h"
#include "core/settings.h"

#include <sys/mman.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cctype>
#include <cstdlib>
#include <mutex>
#include <new>
#include <unordered_map>
#include <vector>

namespace ddp4j {
namespace {

std::array<std::atomic<int64_t>, kNumDeviceTypes> g_allocation_counts{};

// CPU bytes this thread allocated less those it freed: unlike the global count, the Cleaner
// freeing another test's forgotten tensor on its own thread does not move it.
thread_local int64_t t_cpu_bytes_net = 0;

/** Default cache limit: DDP4J_CPU_CACHE_LIMIT when set, else a quarter of physical memory. */
int64_t default_cache_limit() {
  if (const auto env = settings::get("DDP4J_CPU_CACHE_LIMIT")) {  // validated by Java's Setting
    int64_t v = parse_byte_count(env->c_str());
    if (v >= 0) return v;
  }
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page > 0 ? static_cast<int64_t>(pages) * page / 4 : int64_t{1} << 30;
}

/**
 * CPU memory, cached on free so that a training step, which frees and asks again for the same
 * sizes, makes no system allocation (and touches no fresh pages) after the first steps.
 *
 * Small blocks (under kLargeBlock) are 64-byte aligned from the C heap, in the size classes of
 * round_block_size, one free list per class. Large blocks (activations, gradients, workspaces) are
 * whole pages in segments mapped with mmap (LargeBlockPool): a request takes its page-rounded size
 * from the smallest free block that holds it, splitting it, and a freed block merges with its free
 * neighbours. So a large tensor costs its own size, not its size class's, and the pages a step
 * freed serve the next requests whatever their sizes: a ResNet-50 step's sizes shrink along the
 * forward and grow back along the backward, and exact-size caching left ~1.4 GB of blocks idle at
 * its peak. When nothing free holds a request, wholly free segments of at least its size go back
 * to the system (munmap) before a new one is mapped, so idle cache does not add to the peak; so
 * does a free segment beyond the cache limit, and everything free on empty_cache, which the C heap
 * does not promise for blocks it keeps in its arenas. Thread-safe with one mutex: ops allocate a
 * few times each, and the Cleaner and Gloo threads free rarely, so it is uncontended.
 */
class CachingCpuAllocator final : public Allocator {
 public:
  CachingCpuAllocator() : limit_(default_cache_limit()) {}

  void* allocate(size_t nbytes, Device) override {
    void* p = allocate_counted(nbytes);
    t_cpu_bytes_net += static_cast<int64_t>(nbytes);
    return p;
  }

  void deallocate(void* ptr, size_t nbytes, Device) override {
    if (ptr == nullptr) return;
    t_cpu_bytes_net -= static_cast<int64_t>(nbytes);
    deallocate_counted(ptr, nbytes);
  }

  int64_t bytes_in_use() const override {
    std::lock_guard<std::mutex> lock(mutex_);
    return in_use_;
  }
  int64_t bytes_cached() const override {
    std::lock_guard<std::mutex> lock(mutex_);
    return cached_locked();
  }
  void empty_cache() override { release_all(); }
  int64_t cache_limit() const override {
    std::lock_guard<std::mutex> lock(mutex_);
    return limit_;
  }
  void set_cache_limit(int64_t bytes) override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      limit_ = bytes < 0 ? 0 : bytes;
      if (cached_locked() <= limit_) return;
    }
    release_all();  // simplest way under the new limit; the next steps refill what they need
  }

 private:
  void* allocate_counted(size_t nbytes) {
    if (nbytes == 0) return nullptr;
    if (nbytes >= kLargeBlock) return allocate_large(nbytes);
    size_t block = round_block_size(nbytes);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = free_.find(block);
      if (it != free_.end() && !it->second.empty()) {
        void* p = it->second.back();
        it->second.pop_back();
        small_cached_ -= static_cast<int64_t>(block);
        in_use_ += static_cast<int64_t>(nbytes);
        return p;
      }
    }
    void* p = std::aligned_alloc(64, block);
    if (p == nullptr) {  // the cache may hold what the system now lacks: give it back and retry once
      empty_cache();
      p = std::aligned_alloc(64, block);
    }
    if (p == nullptr) {
      throw Error(ErrorKind::OutOfMemory, detail::concat("cannot allocate ", nbytes, " bytes of CPU memory"));
    }
    note_allocation(DeviceType::CPU);
    std::lock_guard<std::mutex> lock(mutex_);
    in_use_ += static_cast<int64_t>(nbytes);
    return p;
  }

  void deallocate_counted(void* ptr, size_t nbytes) {
    if (nbytes >= kLargeBlock) {
      deallocate_large(ptr, nbytes);
      return;
    }
    size_t block = round_block_size(nbytes);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      in_use_ -= static_cast<int64_t>(nbytes);
      if (cached_locked() + static_cast<int64_t>(block) <= limit_) {
        try {
          free_[block].push_back(ptr);
          small_cached_ += static_cast<int64_t>(block);
          return;
        } catch (const std::bad_alloc&) {
          // no room for the list entry: fall through and free the block itself
        }
      }
    }
    std::free(ptr);
  }

  static size_t page_round(size_t nbytes) {
    static const size_t page = [] {
      long p = sysconf(_SC_PAGE_SIZE);
      return p > 0 ? static_cast<size_t>(p) : size_t{4096};
    }();
    return (nbytes + page - 1) / page * page;
  }

  void* allocate_large(size_t nbytes) {
    const size_t want = page_round(nbytes);
    std::vector<LargeBlockPool::Region> to_unmap;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      void* p = nullptr;
      try {
        p = large_.take(want);
        if (p == nullptr) large_.take_free_segments(want, to_unmap);
      } catch (const std::bad_alloc&) {
        p = nullptr;  // no room for the pool's bookkeeping: map a segment of its own below
      }
      if (p != nullptr) {
        in_use_ += static_cast<int64_t>(nbytes);
        return p;
      }
    }
    unmap(to_unmap);
    void* p = map_pages(want);
    if (p == nullptr) {  // the cache may hold what the system now lacks: give it back and retry once
      empty_cache();
      p = map_pages(want);
    }
    if (p == nullptr) {
      throw Error(ErrorKind::OutOfMemory, detail::concat("cannot allocate ", nbytes, " bytes of CPU memory"));
    }
    note_allocation(DeviceType::CPU);
    std::lock_guard<std::mutex> lock(mutex_);
    try {
      large_.add_segment(p, want);
    } catch (const std::bad_alloc&) {
      munmap(p, want);
      throw Error(ErrorKind::OutOfMemory, detail::concat("cannot allocate ", nbytes, " bytes of CPU memory"));
    }
    in_use_ += static_cast<int64_t>(nbytes);
    return p;
  }

  void deallocate_large(void* ptr, size_t nbytes) {
    std::vector<LargeBlockPool::Region> to_unmap;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      in_use_ -= static_cast<int64_t>(nbytes);
      large_.give_back(ptr);
      if (cached_locked() > limit_) {
        large_.take_free_segments(static_cast<size_t>(cached_locked() - limit_), to_unmap);
      }
    }
    unmap(to_unmap);
  }

  static void unmap(const std::vector<LargeBlockPool::Region>& regions) {
    for (const auto& [start, bytes] : regions) munmap(start, bytes);
  }

  /** Small cached blocks plus the pool's free bytes; mutex_ held. */
  int64_t cached_locked() const { return small_cached_ + static_cast<int64_t>(large_.free_bytes()); }

  static void* map_pages(size_t bytes) {
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? nullptr : p;
  }

  void release_all() {
    std::unordered_map<size_t, std::vector<void*>> taken;
    std::vector<LargeBlockPool::Region> taken_large;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      taken.swap(free_);
      small_cached_ = 0;
      large_.take_free_segments(SIZE_MAX, taken_large);
    }
    for (auto& [size, blocks] : taken) {
      for (void* p : blocks) std::free(p);
    }
    unmap(taken_large);
  }

  /** Requests of at least this many bytes get whole pages of their own (mmap), cached by exact size. */
  static constexpr size_t kLargeBlock = size_t{1} << 20;

  mutable std::mutex mutex_;
  std::unordered_map<size_t, std::vector<void*>> free_;  // small: block size -> free blocks of that size
  LargeBlockPool large_;                                // large: segments, split and merged
  int64_t in_use_ = 0;        // requested bytes of live blocks
  int64_t small_cached_ = 0;  // block bytes in free_
  int64_t limit_;
};

std::array<std::atomic<Allocator*>, kNumDeviceTypes>& allocators() {
  // Never destroyed: storages may still be freed during exit (Cleaner, Gloo threads).
  static CachingCpuAllocator* cpu = new CachingCpuAllocator();
  static std::array<std::atomic<Allocator*>, kNumDeviceTypes> table{cpu, nullptr};
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

int64_t native_bytes_cached(DeviceType type) {
  Allocator* a = allocators()[static_cast<int>(type)].load();
  return a == nullptr ? 0 : a->bytes_cached();
}

void native_empty_cache(DeviceType type) {
  Allocator* a = allocators()[static_cast<int>(type)].load();
  if (a != nullptr) a->empty_cache();
}

int64_t cpu_bytes_net_on_this_thread() { return t_cpu_bytes_net; }

int64_t native_allocation_count(DeviceType type) { return g_allocation_counts[static_cast<int>(type)].load(); }

void note_allocation(DeviceType type) {
  g_allocation_counts[static_cast<int>(type)].fetch_add(1, std::memory_order_relaxed);
}

size_t round_block_size(size_t nbytes) {
  if (nbytes <= 512) return ((nbytes + 63) / 64) * 64;
  size_t octave = size_t{1} << (63 - __builtin_clzll(static_cast<unsigned long long>(nbytes - 1)));
  size_t step = octave / 8;
  return ((nbytes + step - 1) / step) * step;
}

int64_t parse_byte_count(const char* text) {
  if (text == nullptr) return -1;
  const char* s = text;
  while (std::isspace(static_cast<unsigned char>(*s))) ++s;
  if (!std::isdigit(static_cast<unsigned char>(*s))) return -1;
  int64_t v = 0;
  for (; std::isdigit(static_cast<unsigned char>(*s)); ++s) {
    if (v > (INT64_MAX - 9) / 10) return -1;
    v = v * 10 + (*s - '0');
  }
  int shift = 0;
  switch (std::tolower(static_cast<unsigned char>(*s))) {
    case 'k': shift = 10; ++s; break;
    case 'm': shift = 20; ++s; break;
    case 'g': shift = 30; ++s; break;
    default: break;
  }
  if (std::tolower(static_cast<unsigned char>(*s)) == 'b') ++s;
  while (std::isspace(static_cast<unsigned char>(*s))) ++s;
  if (*s != '\0' || v > (INT64_MAX >> shift)) return -1;
  return v << shift;
}

}  // namespace ddp4j
