// ctest: the caching CPU allocator: freed blocks are reused without new system allocations, bytes
// in use stay the requested bytes of live storages, large blocks cost their own pages and are split
// and merged across sizes, the cache is bounded and can be emptied.
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

#include "ddp4j/allocator.h"
#include "test_util.h"

using namespace ddp4j;

/** This process's resident set size in KiB (VmRSS in /proc/self/status), -1 if unreadable. */
static long rss_kib() {
  FILE* f = std::fopen("/proc/self/status", "r");
  if (f == nullptr) return -1;
  char line[256];
  long kib = -1;
  while (std::fgets(line, sizeof line, f) != nullptr) {
    if (std::strncmp(line, "VmRSS:", 6) == 0) kib = std::atol(line + 6);
  }
  std::fclose(f);
  return kib;
}

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
  // Large blocks (>= 1 MiB) cost their page-rounded size, not a size class's: a 9 MiB + 4 KiB
  // request caches 9 MiB + 4 KiB (its class would be 10 MiB). A request takes the smallest free
  // block that holds it, split, and freed blocks merge back, so different sizes share pages
  // without new mappings; a request that nothing free holds first gives back wholly free
  // segments of at least its size, so an idle cache does not add to the footprint.
  {
    cpu.empty_cache();
    const int64_t mib = int64_t{1} << 20;
    int64_t before = native_allocation_count(DeviceType::CPU);
    {
      Tensor t = Tensor::empty({(9 * mib + 4096) / 4}, DType::Float32);
      CHECK(reinterpret_cast<uintptr_t>(t.raw_data()) % 64 == 0);
      CHECK(native_bytes_in_use(DeviceType::CPU) == base_in_use + 9 * mib + 4096);
    }
    CHECK(native_bytes_cached(DeviceType::CPU) == 9 * mib + 4096);
    { Tensor t = Tensor::empty({(9 * mib + 100) / 4}, DType::Float32); }  // same pages: reused
    { Tensor t = Tensor::empty({4 * mib / 4}, DType::Float32); }          // split off the 9 MiB block
    CHECK(native_allocation_count(DeviceType::CPU) == before + 1);
    CHECK(native_bytes_cached(DeviceType::CPU) == 9 * mib + 4096);      // merged back whole
    {
      Tensor a = Tensor::empty({4 * mib / 4}, DType::Float32);  // the first 4 MiB of the segment
      Tensor b = Tensor::empty({5 * mib / 4}, DType::Float32);  // the rest (5 MiB + 4 KiB: not split for 4 KiB)
      CHECK(native_allocation_count(DeviceType::CPU) == before + 1);
      CHECK(native_bytes_cached(DeviceType::CPU) == 0);
      Tensor c = Tensor::empty({mib / 4}, DType::Float32);  // nothing free: a new segment
      CHECK(native_allocation_count(DeviceType::CPU) == before + 2);
      (void)a;
      (void)b;
      (void)c;
    }
    CHECK(native_bytes_in_use(DeviceType::CPU) == base_in_use);
    CHECK(native_bytes_cached(DeviceType::CPU) == 10 * mib + 4096);
    // 12 MiB fits in no free block: both free segments (10 MiB + 4 KiB) go back, then it maps its own.
    { Tensor d = Tensor::empty({12 * mib / 4}, DType::Float32); CHECK(native_bytes_cached(DeviceType::CPU) == 0); }
    CHECK(native_allocation_count(DeviceType::CPU) == before + 3);
    CHECK(native_bytes_cached(DeviceType::CPU) == 12 * mib);
    cpu.empty_cache();
    CHECK(native_bytes_cached(DeviceType::CPU) == 0);
    // Beyond the limit a freed large block goes straight back to the system.
    int64_t old_limit = cpu.cache_limit();
    cpu.set_cache_limit(2 * mib);
    { Tensor t = Tensor::empty({3 * mib / 4}, DType::Float32); }
    CHECK(native_bytes_cached(DeviceType::CPU) == 0);
    cpu.set_cache_limit(old_limit);
  }
  // Emptying the cache really gives large blocks back: the resident set shrinks by their pages,
  // even with a small live block allocated after them. (glibc serves 8 MiB from its heap once a
  // freed mapping has raised its mmap threshold, as above, and cannot trim below a live chunk.)
  {
    cpu.empty_cache();
    const int64_t n = (int64_t{8} << 20) / 4;
    Tensor pin;
    {
      std::vector<Tensor> blocks;
      for (int i = 0; i < 8; ++i) {
        blocks.push_back(Tensor::empty({n}, DType::Float32));
        std::memset(blocks.back().raw_data(), 1, static_cast<size_t>(n) * 4);  // touch every page
      }
      pin = Tensor::empty({256}, DType::Float32);
    }
    long cached_rss = rss_kib();
    CHECK(native_bytes_cached(DeviceType::CPU) >= 8 * n * 4);
    cpu.empty_cache();
    long emptied_rss = rss_kib();
    CHECK(cached_rss - emptied_rss >= 60 * 1024);
  }
  // Threads allocating and freeing concurrently leave the counters balanced.
  {
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([t] {
        for (int i = 0; i < 2000; ++i) {
          Tensor a = Tensor::empty({100 + (i % 7) * 300 + t}, DType::Float32);
          Tensor b = Tensor::empty({5000}, DType::Int64);
          Tensor c = Tensor::empty({(1 << 18) + (i % 5) * 1000}, DType::Float32);  // large: mapped pages
          a.data<float>()[0] = 1;
          b.data<int64_t>()[0] = 1;
          c.data<float>()[c.numel() - 1] = 1;
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
