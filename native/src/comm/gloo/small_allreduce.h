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

#include "comm/fingerprint.h"

namespace ddp4j {

/**
 * One-round all-reduce for small tensors over Gloo's bound buffers, registered once per group:
 * every message starts with the sender's Fingerprint of its call, so the receiver can compare it
 * with its own before it uses the data (the process group does; see ProcessGroupGloo). The
 * group's fingerprint exchange before its other collectives is one such message with no payload.
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
   * Sends `fp` and `bytes` of `data` to every peer and receives theirs (an all-gather). Returns
   * the parity whose blocks now hold every rank's message (see fingerprint, payload); they stay
   * valid until the exchange after next. Throws Gloo's exception when a connection fails.
   * `fp.seq` must grow by one per exchange (the group's collective number).
   */
  int exchange(const Fingerprint& fp, const void* data, size_t bytes) {
    const int parity = post(fp, data, bytes);
    complete(parity, fp.seq);
    return parity;
  }

  /** Rank r's fingerprint of the exchange that returned `parity`. */
  Fingerprint fingerprint(int parity, int r) const {
    Fingerprint f;
    std::memcpy(&f, recv[parity].data() + static_cast<size_t>(r) * block, sizeof f);
    return f;
  }

  /** Rank r's bytes of the exchange that returned `parity`. */
  char* payload(int parity, int r) { return recv[parity].data() + static_cast<size_t>(r) * block + kHeader; }

  /** Reduces the n-element payloads of the exchange `parity` in rank order into data. */
  template <typename T>
  void reduce_into(int parity, T* data, size_t n, gloo::AllreduceOptions::Func reduce) {
    T* acc = reinterpret_cast<T*>(payload(parity, 0));
    for (int r = 1; r < size; r++) reduce(acc, acc, reinterpret_cast<const T*>(payload(parity, r)), n);
    std::memcpy(data, acc, n * sizeof(T));
  }

  static constexpr int kSlot = 0x5d4a0;  // bound-buffer slots: kSlot + parity
  static constexpr size_t kHeader = 48;  // a message is [Fingerprint, padded to 8-byte alignment][payload]

  // Declared first, so destroyed last: the buffers unregister themselves from its pairs.
  std::shared_ptr<gloo::Context> context;
  size_t capacity;  // payload bytes
  size_t block;     // kHeader + capacity
  int rank;
  int size;

 private:
  /** The first half of exchange: sends this rank's message and returns at once. */
  int post(const Fingerprint& fp, const void* data, size_t bytes);
  /** The second half: waits until every peer's message of this parity has arrived and ours has left. */
  void complete(int parity, uint64_t seq);
  uint64_t sequence_in(int parity, int r) const { return fingerprint(parity, r).seq; }

  uint64_t ops = 0;  // exchanges so far; parity = ops & 1
  std::vector<char> send[2];
  std::vector<char> recv[2];  // size blocks; block r holds rank r's last message of this parity
  std::vector<std::unique_ptr<gloo::transport::Buffer>> send_to[2];    // by peer rank
  std::vector<std::unique_ptr<gloo::transport::Buffer>> recv_from[2];  // by peer rank
};

}  // namespace ddp4j
