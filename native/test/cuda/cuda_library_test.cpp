// libddp4j_cuda without a GPU (the CI case) and the parts that need none: device queries fail with
// "no CUDA device", tensors cannot be placed on a GPU, and the out-of-memory message carries the
// numbers. With a GPU: host/GPU round trips and the caching allocator's reuse.
#include <cstdio>
#include <cstring>
#include <string>

#include "cuda/caching_allocator.h"
#include "cuda/cuda_context.h"
#include "ddp4j/allocator.h"
#include "ddp4j/dispatch.h"
#include "ddp4j/ops.h"
#include "test_util.h"

using namespace ddp4j;

namespace {

bool contains(const std::string& text, const char* part) { return text.find(part) != std::string::npos; }

void test_out_of_memory_message() {
  std::string m = cuda::out_of_memory_message(1, int64_t{3} << 30, int64_t{512} << 20, int64_t{140} << 30,
                                              int64_t{100} << 30, int64_t{2} << 30);
  CHECK(contains(m, "cuda:1"));
  CHECK(contains(m, "tried to allocate 3.00 GiB (3221225472 bytes)"));
  CHECK(contains(m, "512.00 MiB (536870912 bytes) free of 140.00 GiB"));
  CHECK(contains(m, "smaller batch"));
  CHECK(cuda::format_bytes(40) == "40 B");
}

void test_without_gpu(const std::string& reason) {
  CHECK(contains(reason, "no CUDA device"));
  bool thrown = false;
  try {
    Tensor::empty({4}, DType::Float32, Device{DeviceType::CUDA, 0});
  } catch (const Error& e) {
    thrown = e.kind() == ErrorKind::IllegalState && contains(e.what(), "no CUDA device");
  }
  CHECK(thrown);
  Tensor host = Tensor::zeros({3}, DType::Float32);
  thrown = false;
  try {
    ops::to_device(host, Device{DeviceType::CUDA, 0});
  } catch (const Error& e) {
    thrown = contains(e.what(), "no CUDA device");
  }
  CHECK(thrown);
  CHECK(native_bytes_in_use(DeviceType::CUDA) == 0);
}

void test_with_gpu() {
  Tensor host = Tensor::empty({1000}, DType::Float32);
  for (int i = 0; i < 1000; i++) host.data<float>()[i] = static_cast<float>(i) * 0.5f;
  Device gpu{DeviceType::CUDA, 0};
  Tensor on_gpu = ops::to_device(host, gpu);
  Tensor back = ops::to_device(on_gpu, Device{});
  CHECK(std::memcmp(host.raw_data(), back.raw_data(), host.nbytes()) == 0);
  CHECK(native_bytes_in_use(DeviceType::CUDA) >= 4000);
  // A block freed and asked for again comes from the cache, not from cudaMalloc.
  { Tensor warm = Tensor::empty({12345}, DType::Float32, gpu); }
  int64_t before = native_allocation_count(DeviceType::CUDA);
  for (int i = 0; i < 10; i++) Tensor again = Tensor::empty({12345}, DType::Float32, gpu);
  CHECK(native_allocation_count(DeviceType::CUDA) == before);
  bool thrown = false;
  try {
    Tensor::empty({int64_t{1} << 42}, DType::Float32, gpu);  // 16 TiB
  } catch (const Error& e) {
    thrown = e.kind() == ErrorKind::OutOfMemory && contains(e.what(), "tried to allocate");
    std::printf("out-of-memory message: %s\n", e.what());
  }
  CHECK(thrown);
}

}  // namespace

/**
 * Every kernel of the tensor-op families (shape, broadcast, unary, reduce, matmul) has a CUDA
 * registration beside its CPU one, so ops on cuda tensors dispatch (checked with or without a GPU).
 */
void test_tensor_op_kernels_registered() {
  for (const char* op : {"permute", "cat", "narrow", "narrow_backward", "index_select", "index_select_backward",
                         "gather", "gather_backward", "triangle", "broadcast_binary", "where", "masked_fill", "unary",
                         "sum_rows", "max_dim", "softmax", "softmax_backward", "matmul"}) {
    CHECK(find_kernel(op, DeviceType::CPU) != nullptr);
    if (find_kernel(op, DeviceType::CUDA) == nullptr) {
      std::printf("FAIL no CUDA kernel registered for %s\n", op);
      ++test::failure_count();
    }
  }
}

int main() {
  test_out_of_memory_message();
  test_tensor_op_kernels_registered();
  std::string reason;
  try {
    std::printf("%d CUDA device(s)\n", cuda::device_count());
  } catch (const Error& e) {
    reason = e.what();
  }
  if (reason.empty()) {
    test_with_gpu();
  } else {
    std::printf("no GPU: %s\n", reason.c_str());
    test_without_gpu(reason);
  }
  if (test_failures() == 0) std::printf("cuda_library_test: ok\n");
  return test_failures();
}
