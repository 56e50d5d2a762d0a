// caching_allocator.h: the message of a failed GPU allocation, shared by the allocator and its test.
#pragma once
#include <cstdint>
#include <string>

namespace ddp4j::cuda {

/**
 * "CUDA out of memory on cuda:0: tried to allocate 2.00 GiB (2147483648 bytes); 1.50 GiB
 * (...) free of 140.00 GiB; ddp4j holds ... in use and ... cached ..." with what to do about it.
 */
std::string out_of_memory_message(int device, int64_t asked, int64_t free_bytes, int64_t total_bytes,
                                  int64_t in_use, int64_t cached);

/** "1.50 GiB", "512.00 MiB", "40 B": a byte count for messages. */
std::string format_bytes(int64_t bytes);

}  // namespace ddp4j::cuda
