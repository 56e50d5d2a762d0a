// dispatch.h: the kernel registry keyed by (op name, device type). libddp4j registers CPU kernels
// at load time; libddp4j_cuda registers CUDA kernels when it is loaded. Ops look kernels up through
// a KernelSlot, which caches the pointer per device type so a call costs one array read.
#pragma once
#include <array>
#include <atomic>
#include <string>

#include "ddp4j/tensor.h"

namespace ddp4j {

/** Registers fn as the kernel for op on device type; a later registration replaces it. */
void register_kernel(const std::string& op, DeviceType type, void* fn);
/** The kernel for op on type, or nullptr. */
void* find_kernel(const std::string& op, DeviceType type);

/**
 * A cached lookup of one op's kernels. get() throws IllegalState naming the op and device when no
 * kernel is registered (for CUDA: says libddp4j_cuda is not loaded).
 */
class KernelSlot {
 public:
  explicit KernelSlot(const char* op) : op_(op) {
    for (auto& p : cache_) p.store(nullptr, std::memory_order_relaxed);
  }
  template <typename Fn>
  Fn get(Device device) {
    auto& cached = cache_[static_cast<int>(device.type)];
    void* fn = cached.load(std::memory_order_acquire);
    if (fn == nullptr) {
      fn = resolve(device);
      cached.store(fn, std::memory_order_release);
    }
    return reinterpret_cast<Fn>(fn);
  }

 private:
  void* resolve(Device device) const;
  const char* op_;
  std::array<std::atomic<void*>, kNumDeviceTypes> cache_;
};

/** Registers a kernel from a static initialiser: DDP4J_REGISTER_KERNEL(relu_forward, CPU, cpu::relu_forward). */
struct KernelRegistration {
  KernelRegistration(const char* op, DeviceType type, void* fn) { register_kernel(op, type, fn); }
};

}  // namespace ddp4j

#define DDP4J_CONCAT_INNER(a, b) a##b
#define DDP4J_CONCAT(a, b) DDP4J_CONCAT_INNER(a, b)
#define DDP4J_REGISTER_KERNEL(op, type, fn)                                        \
  static ::ddp4j::KernelRegistration DDP4J_CONCAT(ddp4j_kernel_reg_, __COUNTER__)( \
      #op, ::ddp4j::DeviceType::type, reinterpret_cast<void*>(static_cast<::ddp4j::kernels::op##_fn>(fn)))
