// small_allreduce.h: the one-round all-reduce the Gloo backend uses for small tensors (see
// GlooOptions::small_allreduce_bytes), over its own set of connections.
#pragma once
#include <gloo/allreduce.h>
#include <gloo/context.h>
#include <gloo/transport/buffer.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

namespace ddp4j {

/**
 * One-round all-reduce for small tensors over Gloo's bound buffers, registered once per group:
 * every rank sends its bytes to every peer, which receive them straight into a registered block
 * (no rendezvous message first, unlike unbound buffers), and each rank reduces the blocks in rank
 * order. Two sets of buffers alternate: a peer can only be one op ahead (it starts op k+2 only
 * after receiving this rank's op k+1, sent after this rank finished op k), so op k+2's data never
 * lands in a block op k still reads. Not thread-safe: one op at a time (the group's running op).
 */
class SmallAllreduce {
 public:
  /**
   * Registers the buffers on every pair of `group_context` (its own connections, not the ring's)
   * for payloads of up to `capacity_bytes`, sends one full block to each peer (see the .cpp), and
   * with `sync_reads` switches the pairs to Gloo's sync mode. Throws Gloo's exceptions.
   */
  SmallAllreduce(std::shared_ptr<gloo::Context> group_context, size_t capacity_bytes, bool sync_reads);

  /**
   * Sends `bytes` of `data` to every peer and receives theirs (an all-gather). Returns the parity
   * whose blocks now hold every rank's bytes (see payload); they stay valid until the exchange
   * after next. Throws Gloo's exception when a connection fails.
   */
  int exchange(const void* data, size_t bytes);

  /** Rank r's bytes of the exchange that returned `parity`. */
  char* payload(int parity, int r) { return recv[parity].data() + static_cast<size_t>(r) * block + kHeader; }

  /** All-reduce of n elements in place: exchange, then reduce the blocks in rank order. */
  template <typename T>
  void run(T* data, size_t n, gloo::AllreduceOptions::Func reduce) {
    const int parity = exchange(data, n * sizeof(T));
    T* acc = reinterpret_cast<T*>(payload(parity, 0));
    for (int r = 1; r < size; r++) reduce(acc, acc, reinterpret_cast<const T*>(payload(parity, r)), n);
    std::memcpy(data, acc, n * sizeof(T));
  }

  static constexpr int kSlot = 0x5d4a0;  // bound-buffer slots: kSlot + parity
  static constexpr size_t kHeader = 8;   // a message is [sequence number][payload]

  // Declared first, so destroyed last: the buffers unregister themselves from its pairs.
  std::shared_ptr<gloo::Context> context;
  size_t capacity;  // payload bytes
  size_t block;     // kHeader + capacity
  int rank;
  int size;

 private:
  uint64_t sequence_in(int parity, int r) const;

  uint64_t ops = 0;
  std::vector<char> send[2];
  std::vector<char> recv[2];  // size blocks; block r holds rank r's last message of this parity
  std::vector<std::unique_ptr<gloo::transport::Buffer>> send_to[2];    // by peer rank
  std::vector<std::unique_ptr<gloo::transport::Buffer>> recv_from[2];  // by peer rank
};

}  // namespace ddp4j
