#include "ddp4j/dispatch.h"

#include <map>
#include <mutex>
#include <utility>

namespace ddp4j {
namespace {

struct Registry {
  std::mutex mutex;
  std::map<std::pair<std::string, int>, void*> kernels;
};

Registry& registry() {
  static Registry r;  // function-local: safe to use from other translation units' static initialisers
  return r;
}

}  // namespace

void register_kernel(const std::string& op, DeviceType type, void* fn) {
  auto& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.kernels[{op, static_cast<int>(type)}] = fn;
}

void* find_kernel(const std::string& op, DeviceType type) {
  auto& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.kernels.find({op, static_cast<int>(type)});
  return it == r.kernels.end() ? nullptr : it->second;
}

void* KernelSlot::resolve(Device device) const {
  void* fn = find_kernel(op_, device.type);
  if (fn == nullptr) {
    if (device.type == DeviceType::CUDA) {
      throw Error(ErrorKind::IllegalState, detail::concat("op ", op_, " on ", device.str(),
                                                          ": the CUDA library libddp4j_cuda.so is not loaded"));
    }
    throw Error(ErrorKind::IllegalState, detail::concat("op ", op_, " has no kernel for ", device.str()));
  }
  return fn;
}

}  // namespace ddp4j
