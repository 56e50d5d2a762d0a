// cuda_context.h: what every CUDA source in libddp4j_cuda shares: error checks that turn a
// cudaError_t into a ddp4j::Error, the device guard, and each device's compute stream, which every
// kernel and copy runs on (created on first use, lives as long as the process). Each NCCL process
// group has its own communication stream, ordered against the compute stream with events.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "ddp4j/errors.h"
#include "ddp4j/tensor.h"

namespace ddp4j::cuda {

/**
 * Throws ddp4j::Error for a failed CUDA call: OutOfMemory for cudaErrorMemoryAllocation,
 * IllegalState ("no CUDA device: ...") when no driver or device is present, Runtime otherwise.
 * The message names `what` (the call or kernel) and CUDA's own error string.
 */
[[noreturn]] void throw_cuda_error(cudaError_t error, const char* what);

/**
 * Number of visible CUDA devices. Throws IllegalState "no CUDA device: <reason>" when the driver
 * is missing or sees no GPU (CUDA_VISIBLE_DEVICES, if set, is named in the message).
 */
int device_count();

/**
 * Throws InvalidArgument when index is not a visible device; the message names the visible
 * count, CUDA_VISIBLE_DEVICES and how LOCAL_RANK picks a device.
 */
void check_device_index(int index);

/** The compute stream of a device (non-blocking, created on first use). Every kernel runs on it. */
cudaStream_t compute_stream(int device);

/** Blocks the host until the device's compute stream is idle, then reports deferred kernel errors. */
void synchronize(int device);

/**
 * Errors a kernel could only flag on the device (an out-of-range class index in cross-entropy).
 * Kernels write the bad value into a host-mapped word that holds kNoDeferredError otherwise (the
 * first writer wins: atomicCAS from kNoDeferredError); check_deferred_errors() throws and resets
 * it. It runs after every synchronize() and device-to-host copy.
 */
constexpr int64_t kNoDeferredError = INT64_MIN;
int64_t* deferred_error_word(int device);
void check_deferred_errors(int device);

/** Makes `device` current for the guard's lifetime and restores the previous one after. */
class DeviceGuard {
 public:
  explicit DeviceGuard(int device);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_;
  bool changed_;
};

/** The device of a CUDA tensor and its compute stream, with that device current: what a kernel launch needs. */
struct LaunchContext {
  explicit LaunchContext(const Tensor& t) : device(t.device().index), guard(device), stream(compute_stream(device)) {}
  int device;
  DeviceGuard guard;
  cudaStream_t stream;
};

/** Blocks for a 1-D grid over n elements with `threads` per block, capped so that a grid-stride loop covers the rest. */
inline unsigned int grid_for(int64_t n, int threads = 256) {
  int64_t blocks = (n + threads - 1) / threads;
  if (blocks < 1) blocks = 1;
  return static_cast<unsigned int>(blocks > 65535 * 8 ? 65535 * 8 : blocks);
}

}  // namespace ddp4j::cuda

/** Checks a CUDA runtime call: DDP4J_CUDA_CHECK(cudaMemsetAsync(...)). */
#define DDP4J_CUDA_CHECK(expr)                                                      \
  do {                                                                              \
    cudaError_t ddp4j_cuda_err_ = (expr);                                           \
    if (ddp4j_cuda_err_ != cudaSuccess) ::ddp4j::cuda::throw_cuda_error(ddp4j_cuda_err_, #expr); \
  } while (0)

/** Checks the launch just made: DDP4J_CUDA_CHECK_LAUNCH("relu_forward"). */
#define DDP4J_CUDA_CHECK_LAUNCH(name)                                               \
  do {                                                                              \
    cudaError_t ddp4j_cuda_err_ = cudaGetLastError();                               \
    if (ddp4j_cuda_err_ != cudaSuccess) ::ddp4j::cuda::throw_cuda_error(ddp4j_cuda_err_, name); \
  } while (0)
