// The small all-reduce's buffers and its exchange; see small_allreduce.h.
#include "comm/gloo/small_allreduce.h"

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
  exchange(Fingerprint{}, zeros.data(), capacity);  // seq 0: before the group's first collective
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

int SmallAllreduce::post(const Fingerprint& fp, const void* data, size_t bytes) {
  const int parity = static_cast<int>(++ops & 1);
  std::memset(send[parity].data(), 0, kHeader);
  std::memcpy(send[parity].data(), &fp, sizeof fp);
  if (bytes > 0) std::memcpy(send[parity].data() + kHeader, data, bytes);
  for (int p = 0; p < size; p++) {
    if (p != rank) send_to[parity][static_cast<size_t>(p)]->send(0, kHeader + bytes);
  }
  std::memcpy(recv[parity].data() + static_cast<size_t>(rank) * block, send[parity].data(), kHeader + bytes);
  return parity;
}

void SmallAllreduce::complete(int parity, uint64_t seq) {
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
}

}  // namespace ddp4j
