// The CPU allocator's large-block pool (see large_block_pool.h).
#include "core/large_block_pool.h"

#include <iterator>

namespace ddp4j {

LargeBlockPool::~LargeBlockPool() {
  for (Block* b : free_) delete b;
  for (auto& [start, b] : live_) delete b;
}

void LargeBlockPool::insert_free(Block* b) {
  b->free = true;
  free_.insert(b);
  free_bytes_ += b->size;
}

void LargeBlockPool::erase_free(Block* b) {
  free_.erase(b);
  free_bytes_ -= b->size;
}

void* LargeBlockPool::take(size_t bytes) {
  Block key{nullptr, bytes, true, nullptr, nullptr};
  auto it = free_.lower_bound(&key);
  if (it == free_.end()) return nullptr;
  Block* b = *it;
  erase_free(b);
  if (b->size - bytes >= kMinSplit) {
    Block* rest = new Block{b->start + bytes, b->size - bytes, true, b, b->next};
    if (b->next != nullptr) b->next->prev = rest;
    b->next = rest;
    b->size = bytes;
    insert_free(rest);
  }
  b->free = false;
  live_.emplace(b->start, b);
  return b->start;
}

void LargeBlockPool::add_segment(void* start, size_t bytes) {
  Block* b = new Block{static_cast<char*>(start), bytes, false, nullptr, nullptr};
  live_.emplace(b->start, b);
}

size_t LargeBlockPool::give_back(void* block) {
  auto it = live_.find(block);
  if (it == live_.end()) return 0;
  Block* b = it->second;
  live_.erase(it);
  const size_t size = b->size;
  if (b->next != nullptr && b->next->free) {
    Block* n = b->next;
    erase_free(n);
    b->size += n->size;
    b->next = n->next;
    if (n->next != nullptr) n->next->prev = b;
    delete n;
  }
  if (b->prev != nullptr && b->prev->free) {
    Block* p = b->prev;
    erase_free(p);
    p->size += b->size;
    p->next = b->next;
    if (b->next != nullptr) b->next->prev = p;
    delete b;
    b = p;
  }
  insert_free(b);
  return size;
}

void LargeBlockPool::take_free_segments(size_t bytes, std::vector<Region>& out) {
  size_t taken = 0;
  for (auto it = free_.end(); it != free_.begin() && taken < bytes;) {
    --it;
    Block* b = *it;
    if (b->prev != nullptr || b->next != nullptr) continue;  // part of a segment still in use
    taken += b->size;
    out.emplace_back(b->start, b->size);
    free_bytes_ -= b->size;
    it = free_.erase(it);
    delete b;
  }
}

}  // namespace ddp4j
