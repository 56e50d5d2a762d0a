// The CUDA caching allocator: GPU memory for tensors without a cudaMalloc per tensor. Freed blocks
// stay in per-device, per-size free lists and are handed out again; after the first steps of a
// training loop every size it asks for is cached, so a steady-state step makes no cudaMalloc
// (native_allocation_count(CUDA) stops growing).
//
// Why reuse is safe without events: every kernel and copy runs on the device's one compute stream,
// so work queued after a free that reuses the block runs after the work that used it. Memory an
// NCCL collective uses on the communication stream is kept alive by its Work until the collective
// has finished on the GPU.
#include "cuda/caching_allocator.h"

#include <array>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <new>
#include <unordered_map>
#include <vector>

#include "core/settings.h"
#include "cuda/cuda_context.h"
#include "ddp4j/allocator.h"

namespace ddp4j::cuda {

std::string format_bytes(int64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  char buf[64];
  if (u == 0) {
    std::snprintf(buf, sizeof buf, "%lld B", static_cast<long long>(bytes));
  } else {
    std::snprintf(buf, sizeof buf, "%.2f %s", v, units[u]);
  }
  return buf;
}

std::string out_of_memory_message(int device, int64_t asked, int64_t free_bytes, int64_t total_bytes,
                                  int64_t in_use, int64_t cached) {
  return detail::concat("CUDA out of memory on cuda:", device, ": tried to allocate ", format_bytes(asked), " (",
                        asked, " bytes); ", format_bytes(free_bytes), " (", free_bytes, " bytes) free of ",
                        format_bytes(total_bytes), "; ddp4j holds ", format_bytes(in_use), " in live tensors and ",
                        format_bytes(cached), " cached (already returned before this error). Use a smaller batch, "
                        "close tensors you no longer need (or create them in Tensors.scope()), or check that no "
                        "other process shares this GPU");
}

namespace {

constexpr int kMaxDevices = 64;

class CudaCachingAllocator final : public Allocator {
 public:
  CudaCachingAllocator() {
    if (const auto env = settings::get("DDP4J_CUDA_CACHE_LIMIT")) limit_ = parse_byte_count(env->c_str());
  }

  void* allocate(size_t nbytes, Device device) override {
    if (nbytes == 0) return nullptr;
    check_device_index(device.index);
    size_t block = round_block_size(nbytes < 512 ? 512 : nbytes);
    PerDevice& d = devices_[device.index];
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = d.free.find(block);
      if (it != d.free.end() && !it->second.empty()) {
        void* p = it->second.back();
        it->second.pop_back();
        d.cached -= static_cast<int64_t>(block);
        d.in_use += static_cast<int64_t>(nbytes);
        return p;
      }
    }
    DeviceGuard guard(device.index);
    void* p = nullptr;
    cudaError_t e = cudaMalloc(&p, block);
    if (e == cudaErrorMemoryAllocation) {  // the cache may hold what is missing: give it back, retry once
      cudaGetLastError();
      release_cache(device.index);
      e = cudaMalloc(&p, block);
    }
    if (e == cudaErrorMemoryAllocation) {
      cudaGetLastError();
      size_t free_bytes = 0, total_bytes = 0;
      cudaMemGetInfo(&free_bytes, &total_bytes);
      std::lock_guard<std::mutex> lock(mutex_);
      throw Error(ErrorKind::OutOfMemory,
                  out_of_memory_message(device.index, static_cast<int64_t>(nbytes), static_cast<int64_t>(free_bytes),
                                        static_cast<int64_t>(total_bytes), d.in_use, d.cached));
    }
    if (e != cudaSuccess) throw_cuda_error(e, "cudaMalloc");
    note_allocation(DeviceType::CUDA);
    std::lock_guard<std::mutex> lock(mutex_);
    d.in_use += static_cast<int64_t>(nbytes);
    return p;
  }

  void deallocate(void* ptr, size_t nbytes, Device device) override {
    if (ptr == nullptr) return;
    size_t block = round_block_size(nbytes < 512 ? 512 : nbytes);
    PerDevice& d = devices_[device.index];
    bool keep;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      d.in_use -= static_cast<int64_t>(nbytes);
      const int64_t limit = limit_.load();
      keep = limit < 0 || d.cached + static_cast<int64_t>(block) <= limit;
      if (keep) {
        try {
          d.free[block].push_back(ptr);
          d.cached += static_cast<int64_t>(block);
        } catch (const std::bad_alloc&) {
          keep = false;  // no room to remember the block: give it back instead (must not throw)
        }
      }
    }
    if (!keep) {
      DeviceGuard guard(device.index);  // cudaFree waits for the work queued on the block
      cudaFree(ptr);
    }
  }

  int64_t bytes_in_use() const override {
    std::lock_guard<std::mutex> lock(mutex_);
    int64_t total = 0;
    for (const PerDevice& d : devices_) total += d.in_use;
    return total;
  }

  int64_t bytes_cached() const override {
    std::lock_guard<std::mutex> lock(mutex_);
    int64_t total = 0;
    for (const PerDevice& d : devices_) total += d.cached;
    return total;
  }

  void empty_cache() override {
    for (int i = 0; i < kMaxDevices; ++i) {
      bool any;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        any = devices_[i].cached > 0;
      }
      if (any) release_cache(i);
    }
  }

  int64_t cache_limit() const override { return limit_; }
  void set_cache_limit(int64_t bytes) override { limit_ = bytes; }

 private:
  struct PerDevice {
    std::unordered_map<size_t, std::vector<void*>> free;
    int64_t in_use = 0;
    int64_t cached = 0;
  };

  /** Returns a device's cached blocks to CUDA (cudaFree waits for the work queued on each). */
  void release_cache(int device) {
    std::unordered_map<size_t, std::vector<void*>> blocks;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      blocks.swap(devices_[device].free);
      devices_[device].cached = 0;
    }
    DeviceGuard guard(device);
    for (auto& [size, ptrs] : blocks) {
      for (void* p : ptrs) cudaFree(p);
    }
  }

  mutable std::mutex mutex_;
  std::array<PerDevice, kMaxDevices> devices_;
  std::atomic<int64_t> limit_{-1};  // -1: no limit (PyTorch's caching allocator keeps everything too)
};

/** Installed when the library is loaded; never destroyed (the driver may be gone at exit). */
struct InstallAllocator {
  InstallAllocator() { set_allocator(DeviceType::CUDA, new CudaCachingAllocator()); }
} install_allocator;

}  // namespace
}  // namespace ddp4j::cuda
