// The Gloo group's fingerprint exchange before an op: every rank's Fingerprint compared with its
// own, over the small all-reduce's connections, the shared-memory segment or Gloo's all-gather.
#include <gloo/allgather.h>

#include "comm/gloo/process_group.h"
#include "comm/gloo/small_allreduce.h"
#include "comm/local/local_collectives.h"

namespace ddp4j {

void ProcessGroupGloo::check_peers(const Fingerprint& mine, int parity) {
  for (int r = 0; r < size(); r++) {
    if (r == rank()) continue;
    const Fingerprint theirs = small_->fingerprint(parity, r);
    if (!same_call(mine, theirs)) {
      throw mismatch_error(mine, rank(), r, detail::concat("rank ", r), theirs, "gloo");
    }
  }
}

void ProcessGroupGloo::exchange_headers(const Op& op, uint32_t tag) {
  const int n = size();
  if (n == 1) return;
  const Fingerprint& mine = op.fp;
  if (small_ && !shm_only()) {
    // One message to each peer over the small all-reduce's connections.
    check_peers(mine, small_->exchange(mine, nullptr, 0));
    return;
  }
  std::vector<Fingerprint> all(static_cast<size_t>(n));
  if (shm_only()) {
    // Through the segment: a peer inside any other shared-memory collective is seen at once (the
    // transport compares fingerprints) instead of both waiting for the timeout.
    local_->allgather(&mine, all.data(), sizeof(Fingerprint), &mine);
  } else {
    gloo::AllgatherOptions opts(context_);
    opts.setTag(tag);
    opts.setTimeout(options_.timeout);
    opts.setInput<uint8_t>(reinterpret_cast<uint8_t*>(const_cast<Fingerprint*>(&mine)), sizeof(Fingerprint));
    opts.setOutput<uint8_t>(reinterpret_cast<uint8_t*>(all.data()), sizeof(Fingerprint) * all.size());
    gloo::allgather(opts);
  }
  for (int r = 0; r < n; r++) {
    if (r == rank() || same_call(all[static_cast<size_t>(r)], mine)) continue;
    throw mismatch_error(mine, rank(), r, detail::concat("rank ", r), all[static_cast<size_t>(r)],
                         shm_only() ? "shared memory" : "gloo");
  }
}

}  // namespace ddp4j
