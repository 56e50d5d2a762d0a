// ctest: the CPU allocator's large-block pool on made-up addresses (it never touches the memory):
// best fit with splitting, merging with free neighbours on both sides, segments kept apart, and
// only wholly free segments handed back for unmapping, the largest first.
#include <cstdint>
#include <vector>

#include "core/large_block_pool.h"
#include "test_util.h"

using namespace ddp4j;

namespace {

constexpr size_t kMiB = size_t{1} << 20;

char* at(uintptr_t base, size_t offset) { return reinterpret_cast<char*>(base + offset); }

}  // namespace

int main() {
  const uintptr_t seg_a = uintptr_t{1} << 40, seg_b = uintptr_t{2} << 40;
  {
    LargeBlockPool pool;
    pool.add_segment(at(seg_a, 0), 10 * kMiB);
    CHECK(pool.give_back(at(seg_a, 0)) == 10 * kMiB);
    CHECK(pool.free_bytes() == 10 * kMiB);
    CHECK(pool.take(3 * kMiB) == at(seg_a, 0));  // split: 7 MiB stay free
    CHECK(pool.take(3 * kMiB) == at(seg_a, 3 * kMiB));
    CHECK(pool.free_bytes() == 4 * kMiB);
    CHECK(pool.take(4 * kMiB - 4096) == at(seg_a, 6 * kMiB));  // the 4 KiB left is not split off
    CHECK(pool.free_bytes() == 0);
    CHECK(pool.take(kMiB) == nullptr);
    CHECK(pool.give_back(at(seg_a, 3 * kMiB)) == 3 * kMiB);  // the middle: no free neighbour
    CHECK(pool.give_back(at(seg_a, 0)) == 3 * kMiB);          // merges with the middle
    CHECK(pool.free_bytes() == 6 * kMiB);
    CHECK(pool.take(6 * kMiB) == at(seg_a, 0));  // one block again
    CHECK(pool.give_back(at(seg_a, 0)) == 6 * kMiB);
    std::vector<LargeBlockPool::Region> out;
    pool.take_free_segments(SIZE_MAX, out);
    CHECK(out.empty());  // the segment's last 4 MiB are still in use
    CHECK(pool.give_back(at(seg_a, 6 * kMiB)) == 4 * kMiB);  // merges with the block before it
    CHECK(pool.give_back(at(seg_a, 6 * kMiB)) == 0);         // not handed out (any more)
    pool.take_free_segments(1, out);
    CHECK(out.size() == 1 && out[0].first == at(seg_a, 0) && out[0].second == 10 * kMiB);
    CHECK(pool.free_bytes() == 0);
  }
  {
    // Two segments: blocks never merge across them; the best fit is the smallest free block that
    // holds the request; wholly free segments go back largest first, only as many as asked for.
    LargeBlockPool pool;
    pool.add_segment(at(seg_a, 0), 8 * kMiB);
    pool.add_segment(at(seg_b, 0), 5 * kMiB);
    pool.give_back(at(seg_a, 0));
    pool.give_back(at(seg_b, 0));
    CHECK(pool.free_bytes() == 13 * kMiB);
    CHECK(pool.take(5 * kMiB) == at(seg_b, 0));
    CHECK(pool.take(6 * kMiB) == at(seg_a, 0));  // 2 MiB of segment a stay free
    CHECK(pool.take(3 * kMiB) == nullptr);
    pool.give_back(at(seg_b, 0));
    pool.give_back(at(seg_a, 0));
    CHECK(pool.take(8 * kMiB) == at(seg_a, 0));  // segment a is whole again
    pool.give_back(at(seg_a, 0));
    std::vector<LargeBlockPool::Region> out;
    pool.take_free_segments(6 * kMiB, out);
    CHECK(out.size() == 1 && out[0].first == at(seg_a, 0) && out[0].second == 8 * kMiB);
    CHECK(pool.free_bytes() == 5 * kMiB);
    pool.take_free_segments(6 * kMiB, out);
    CHECK(out.size() == 2 && out[1].first == at(seg_b, 0));
    CHECK(pool.free_bytes() == 0);
  }
  return test_failures();
}
