// Error mapping, device checks, per-device streams and the deferred-error word (cuda_context.h).
#include "cuda/cuda_context.h"

#include <array>
#include <atomic>
#include <cstdlib>
#include <mutex>

namespace ddp4j::cuda {
namespace {

constexpr int kMaxDevices = 64;

struct DeviceState {
  std::once_flag once;
  cudaStream_t compute = nullptr;
  int64_t* error_word = nullptr;  // host-mapped, written by kernels
};

std::array<DeviceState, kMaxDevices> g_devices;

std::string visible_devices_note() {
  const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
  return visible ? std::string(" (CUDA_VISIBLE_DEVICES=") + visible + ")" : std::string();
}

DeviceState& state(int device) {
  check_device_index(device);
  DeviceState& s = g_devices[device];
  std::call_once(s.once, [&] {
    DeviceGuard guard(device);
    DDP4J_CUDA_CHECK(cudaStreamCreateWithFlags(&s.compute, cudaStreamNonBlocking));
    DDP4J_CUDA_CHECK(cudaHostAlloc(reinterpret_cast<void**>(&s.error_word), sizeof(int64_t), cudaHostAllocMapped));
    *s.error_word = kNoDeferredError;
  });
  return s;
}

}  // namespace

void throw_cuda_error(cudaError_t error, const char* what) {
  cudaGetLastError();  // clear a sticky launch error so the next call does not report it again
  std::string message = std::string(what) + ": " + cudaGetErrorString(error) + " (" + cudaGetErrorName(error) + ")";
  switch (error) {
    case cudaErrorMemoryAllocation:
      throw Error(ErrorKind::OutOfMemory, "CUDA out of memory in " + message);
    case cudaErrorNoDevice:
    case cudaErrorInsufficientDriver:
      throw Error(ErrorKind::IllegalState, "no CUDA device: " + message + visible_devices_note());
    default:
      throw Error(ErrorKind::Runtime, "CUDA error in " + message);
  }
}

int device_count() {
  static std::atomic<int> cached{0};  // devices do not come and go while a process runs
  if (int c = cached.load(std::memory_order_relaxed); c > 0) return c;
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess || n == 0) {
    cudaGetLastError();
    std::string reason = e == cudaSuccess ? std::string("the driver sees no GPU")
                         : e == cudaErrorInsufficientDriver
                             ? detail::concat("no NVIDIA driver was found, or it is older than CUDA ", CUDART_VERSION / 1000,
                                              ".", CUDART_VERSION % 1000 / 10, ", which this build needs (",
                                              cudaGetErrorName(e), ")")
                             : detail::concat(cudaGetErrorString(e), " (", cudaGetErrorName(e), ")");
    throw Error(ErrorKind::IllegalState, "no CUDA device: " + reason + visible_devices_note() +
                                             "; use device cpu (or --device cpu) on this machine");
  }
  cached.store(n, std::memory_order_relaxed);
  return n;
}

void check_device_index(int index) {
  int n = device_count();
  DDP4J_CHECK_ARG(index >= 0 && index < n && index < kMaxDevices, "CUDA device cuda:", index, " does not exist: ", n,
                  " GPU(s) are visible", visible_devices_note(),
                  ". The launcher gives local rank r device cuda:r, so start at most as many processes per node "
                  "as GPUs (LOCAL_RANK must be below ", n, "), or widen CUDA_VISIBLE_DEVICES");
}

cudaStream_t compute_stream(int device) { return state(device).compute; }


int64_t* deferred_error_word(int device) { return state(device).error_word; }

void check_deferred_errors(int device) {
  DeviceState& s = state(device);
  int64_t word = *s.error_word;
  if (word != kNoDeferredError) {
    *s.error_word = kNoDeferredError;
    throw Error(ErrorKind::InvalidArgument,
                detail::concat("cross_entropy on cuda:", device, ": target contains class index ", word,
                               ", outside [0, number of classes); check the labels (reported at the next "
                               "synchronisation after the step that used them)"));
  }
}

void synchronize(int device) {
  DeviceState& s = state(device);
  DeviceGuard guard(device);
  DDP4J_CUDA_CHECK(cudaStreamSynchronize(s.compute));
  check_deferred_errors(device);
}

DeviceGuard::DeviceGuard(int device) : previous_(0), changed_(false) {
  DDP4J_CUDA_CHECK(cudaGetDevice(&previous_));
  if (previous_ != device) {
    DDP4J_CUDA_CHECK(cudaSetDevice(device));
    changed_ = true;
  }
}

DeviceGuard::~DeviceGuard() {
  if (changed_) cudaSetDevice(previous_);
}

}  // namespace ddp4j::cuda
