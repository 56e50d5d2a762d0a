// Copies between the host and a GPU, or between two GPUs (kernels::copy_across_fn). All copies run
// on the compute stream of the GPU involved, so they are ordered with the kernels around them.
#include "cuda/cuda_context.h"
#include "ddp4j/dispatch.h"
#include "ddp4j/kernels.h"

namespace ddp4j::cuda {
namespace {

/** A timing-free event on a device, destroyed at scope exit (CUDA frees it once it has completed). */
struct Event {
  explicit Event(int device) {
    DeviceGuard guard(device);
    DDP4J_CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
  }
  ~Event() { cudaEventDestroy(event); }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  cudaEvent_t event = nullptr;
};

void copy_across(const Tensor& src, Tensor& dst) {
  size_t n = src.nbytes();
  if (n == 0) return;
  bool from_gpu = src.device().type == DeviceType::CUDA, to_gpu = dst.device().type == DeviceType::CUDA;
  if (from_gpu && to_gpu) {
    if (src.device() == dst.device()) {
      LaunchContext ctx(dst);
      DDP4J_CUDA_CHECK(cudaMemcpyAsync(dst.raw_data(), src.raw_data(), n, cudaMemcpyDeviceToDevice, ctx.stream));
      return;
    }
    // Two compute streams: the copy (on dst's) waits for src's queued writers, and src's stream
    // waits for the copy before anything later there may overwrite src or reuse its block.
    const int src_device = src.device().index;
    cudaStream_t src_stream = compute_stream(src_device);
    Event src_ready(src_device), copied(dst.device().index);
    {
      DeviceGuard guard(src_device);
      DDP4J_CUDA_CHECK(cudaEventRecord(src_ready.event, src_stream));
    }
    LaunchContext ctx(dst);
    DDP4J_CUDA_CHECK(cudaStreamWaitEvent(ctx.stream, src_ready.event, 0));
    DDP4J_CUDA_CHECK(cudaMemcpyPeerAsync(dst.raw_data(), dst.device().index, src.raw_data(), src_device, n,
                                         ctx.stream));
    DDP4J_CUDA_CHECK(cudaEventRecord(copied.event, ctx.stream));
    DeviceGuard guard(src_device);
    DDP4J_CUDA_CHECK(cudaStreamWaitEvent(src_stream, copied.event, 0));
  } else if (to_gpu) {
    // From pageable host memory the call returns once the data is staged, so the host tensor may go.
    LaunchContext ctx(dst);
    DDP4J_CUDA_CHECK(cudaMemcpyAsync(dst.raw_data(), src.raw_data(), n, cudaMemcpyHostToDevice, ctx.stream));
  } else {
    LaunchContext ctx(src);
    DDP4J_CUDA_CHECK(cudaMemcpyAsync(dst.raw_data(), src.raw_data(), n, cudaMemcpyDeviceToHost, ctx.stream));
    DDP4J_CUDA_CHECK(cudaStreamSynchronize(ctx.stream));
    check_deferred_errors(ctx.device);
  }
}

DDP4J_REGISTER_KERNEL(copy_across, CUDA, copy_across);

}  // namespace
}  // namespace ddp4j::cuda
