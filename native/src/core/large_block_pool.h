// large_block_pool.h: the CPU allocator's pool of large blocks (1 MiB and up): memory mapped in
// segments, handed out in page-rounded blocks that are split from free ones and merged back with
// their free neighbours, so that a training step, whose sizes shrink along the forward and grow
// back along the backward, reuses the pages it has instead of mapping new ones beside idle ones.
#pragma once

#include <cstddef>
#include <set>
#include <unordered_map>
#include <utility>
#include <vector>

namespace ddp4j {

/**
 * Blocks inside mapped segments. Not thread-safe: the allocator calls it under its mutex. It maps
 * and unmaps nothing itself: the caller maps new segments (add_segment) and unmaps the regions it
 * is given back (take_free_segments), outside its lock.
 */
class LargeBlockPool {
 public:
  /** A mapped region to unmap: start and length in bytes. */
  using Region = std::pair<void*, size_t>;

  LargeBlockPool() = default;
  ~LargeBlockPool();
  LargeBlockPool(const LargeBlockPool&) = delete;
  LargeBlockPool& operator=(const LargeBlockPool&) = delete;

  /**
   * A block of `bytes` (a multiple of the page size) from the smallest free block that holds it
   * (best fit, lowest address among equals); the rest of that block stays free when it is at
   * least kMinSplit, else it comes along. nullptr when no free block is large enough.
   */
  void* take(size_t bytes);

  /** Adds a freshly mapped segment of `bytes`, handed out whole (as take would). */
  void add_segment(void* start, size_t bytes);

  /** Frees a block from take or add_segment (merging it with free neighbours); returns its size. */
  size_t give_back(void* block);

  /**
   * Removes wholly free segments, the largest first, until their sizes add up to at least
   * `bytes` or none is left, and appends them to `out` for the caller to unmap.
   */
  void take_free_segments(size_t bytes, std::vector<Region>& out);

  /** Bytes in free blocks (cached: mapped but not handed out). */
  size_t free_bytes() const { return free_bytes_; }

  /** Blocks smaller than this are not split off a larger free block (it is handed out whole). */
  static constexpr size_t kMinSplit = size_t{1} << 20;

 private:
  struct Block {
    char* start;
    size_t size;
    bool free;
    Block* prev;  // the neighbours in the same segment, by address; null at a segment's ends
    Block* next;
  };
  struct BySizeThenAddress {
    bool operator()(const Block* a, const Block* b) const {
      return a->size != b->size ? a->size < b->size : a->start < b->start;
    }
  };

  void insert_free(Block* b);
  void erase_free(Block* b);

  std::set<Block*, BySizeThenAddress> free_;
  std::unordered_map<void*, Block*> live_;  // handed-out blocks by start
  size_t free_bytes_ = 0;
};

}  // namespace ddp4j
