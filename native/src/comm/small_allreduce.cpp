// The small all-reduce's buffers and its exchange; see small_allreduce.h.
#include "comm/small_allreduce.h"

#include <gloo/transport/pair.h>

namespace ddp4j {

SmallAllreduce::SmallAllreduce(std::shared_ptr<gloo::Context> group_context, size_t capacity_bytes, bool sync_reads)
    : context(std::move(group_context)),
      capacity((capacity_bytes + 7) / 8 * 8),  // keeps every payload 8-byte aligned
      block(kHeader + capacity),
      rank(context->rank),
      size(context->size) {
  for (int parity = 0; parity < 2; parity++) {
    send[parity].resize(block);
    recv[parity].resize(block * static_cast<size_t>(size));
    send_to[parity].resize(static_cast<size_t>(size));
    recv_from[parity].resize(static_cast<size_t>(size));
    for (int p = 0; p < size; p++) {
      if (p == rank) continue;
      auto& pair = context->getPair(p);
      recv_from[parity][static_cast<size_t>(p)] =
          pair->createRecvBuffer(kSlot + parity, recv[parity].data() + static_cast<size_t>(p) * block, block);
      send_to[parity][static_cast<size_t>(p)] = pair->createSendBuffer(kSlot + parity, send[parity].data(), block);
    }
  }
  // Gloo sets a socket's send buffer to the size of the first bound-buffer send on it (and never
  // shrinks it): a first send of a few bytes would leave later large sends crawling. So send a
  // full block to every peer first; it also checks the connections.
  std::vector<char> zeros(capacity);
  run<char>(zeros.data(), capacity, [](void*, const void*, const void*, size_t) {});
  // Sync mode: the thread that waits reads the socket itself, instead of Gloo's network thread
  // reading and then waking it: one thread wake-up less per message. Safe here because only the
  // op holding running_ uses these connections. A message that arrived before the switch was
  // already read and counted.
  if (sync_reads) {
    for (int p = 0; p < size; p++) {
      if (p != rank) context->getPair(p)->setSync(true, false);
    }
  }
}

uint64_t SmallAllreduce::sequence_in(int parity, int r) const {
  uint64_t seq;
  std::memcpy(&seq, recv[parity].data() + static_cast<size_t>(r) * block, kHeader);
  return seq;
}

int SmallAllreduce::exchange(const void* data, size_t bytes) {
  const uint64_t seq = ++ops;
  const int parity = static_cast<int>(seq & 1);
  std::memcpy(send[parity].data(), &seq, kHeader);
  std::memcpy(send[parity].data() + kHeader, data, bytes);
  for (int p = 0; p < size; p++) {
    if (p != rank) send_to[parity][static_cast<size_t>(p)]->send(0, kHeader + bytes);
  }
  std::memcpy(recv[parity].data() + static_cast<size_t>(rank) * block, send[parity].data(), kHeader + bytes);
  for (int p = 0; p < size; p++) {
    if (p == rank) continue;
    try {
      recv_from[parity][static_cast<size_t>(p)]->waitRecv();
      send_to[parity][static_cast<size_t>(p)]->waitSend();
    } catch (const std::exception&) {
      // A peer that finished this op may close its group before this rank has waited: Gloo then
      // fails every buffer of the pair, even one whose data has arrived. The data has arrived
      // if the block carries this op's sequence number (TCP delivers it before the close).
      if (sequence_in(parity, p) != seq) throw;
    }
  }
  return parity;
}

}  // namespace ddp4j
