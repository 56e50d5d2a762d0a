// Copies between the host and a GPU, or between two GPUs (kernels::copy_across_fn). All copies run
// on the compute stream of the GPU involved, so they are ordered with the kernels around them.
#include "cuda/cuda_context.h"
#include "ddp4j/dispatch.h"
#include "ddp4j/kernels.h"

namespace ddp4j::cuda {
namespace {

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
    synchronize(src.device().index);  // src's pending kernels must finish before another GPU reads it
    LaunchContext ctx(dst);
    DDP4J_CUDA_CHECK(cudaMemcpyPeerAsync(dst.raw_data(), dst.device().index, src.raw_data(), src.device().index, n,
                                         ctx.stream));
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
