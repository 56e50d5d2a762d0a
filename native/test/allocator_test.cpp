// ctest: the caching CPU allocator: freed blocks are reused without new system allocations, bytes
// in use stay the requested bytes of live storages, the cache is bounded and can be emptied.
#include <thread>
#include <vector>

#include "ddp4j/allocator.h"
#include "test_util.h"

using namespace ddp4j;

int main() {
  Allocator& cpu = get_allocator(DeviceType::CPU);
  cpu.empty_cache();
  const int64_t base_in_use = native_bytes_in_use(DeviceType::CPU);

  // A freed block is cached and serves the next request of its size class without a system call.
  {
    int64_t before = native_allocation_count(DeviceType::CPU);
    { Tensor t = Tensor::empty({1000}, DType::Float32); CHECK(native_bytes_in_use(DeviceType::CPU) == base_in_use + 4000); }
    CHECK(native_allocation_count(DeviceType::CPU) == before + 1);
    CHECK(native_bytes_in_use(DeviceType::CPU) == base_in_use);
    CHECK(native_bytes_cached(DeviceType::CPU) >= 4000);
    for (int i = 0; i < 10; ++i) {
      Tensor a = Tensor::empty({1000}, DType::Float32);
      Tensor b = Tensor::empty({1010}, DType::Float32);  // same size class as a: one more block, then both reused
      (void)a;
      (void)b;
    }
    CHECK(native_allocation_count(DeviceType::CPU) == before + 2);
    CHECK(native_bytes_in_use(DeviceType::CPU) == base_in_use);
  }
  // Memory handed out is 64-byte aligned.
  {
    Tensor t = Tensor::empty({3}, DType::Float32);
    CHECK(reinterpret_cast<uintptr_t>(t.raw_data()) % 64 == 0);
  }
  // empty_cache gives everything back; the next request is a system allocation again.
  {
    cpu.empty_cache();
    CHECK(native_bytes_cached(DeviceType::CPU) == 0);
    int64_t before = native_allocation_count(DeviceType::CPU);
    { Tensor t = Tensor::empty({1000}, DType::Float32); }
    CHECK(native_allocation_count(DeviceType::CPU) == before + 1);
  }
  // The limit bounds the cache: blocks freed beyond it go back to the system.
  {
    int64_t old_limit = cpu.cache_limit();
    cpu.set_cache_limit(100000);
    CHECK(native_bytes_cached(DeviceType::CPU) <= 100000);
    {
      std::vector<Tensor> ts;
      for (int i = 0; i < 8; ++i) ts.push_back(Tensor::empty({16384}, DType::Float32));  // 64 KiB each
    }
    CHECK(native_bytes_cached(DeviceType::CPU) <= 100000);
    CHECK(native_bytes_cached(DeviceType::CPU) >= 65536);
    cpu.set_cache_limit(0);
    CHECK(native_bytes_cached(DeviceType::CPU) == 0);
    cpu.set_cache_limit(old_limit);
  }
  // Threads allocating and freeing concurrently leave the counters balanced.
  {
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([t] {
        for (int i = 0; i < 2000; ++i) {
          Tensor a = Tensor::empty({100 + (i % 7) * 300 + t}, DType::Float32);
          Tensor b = Tensor::empty({5000}, DType::Int64);
          a.data<float>()[0] = 1;
          b.data<int64_t>()[0] = 1;
        }
      });
    }
    for (auto& th : threads) th.join();
    CHECK(native_bytes_in_use(DeviceType::CPU) == base_in_use);
  }
  // Byte counts as the DDP4J_CPU_CACHE_LIMIT variable takes them.
  CHECK(parse_byte_count("123") == 123);
  CHECK(parse_byte_count("2k") == 2048);
  CHECK(parse_byte_count("512MB") == 512LL << 20);
  CHECK(parse_byte_count("1g") == 1LL << 30);
  CHECK(parse_byte_count("") == -1);
  CHECK(parse_byte_count("-5") == -1);
  CHECK(parse_byte_count("12x") == -1);
  return test_failures();
}
