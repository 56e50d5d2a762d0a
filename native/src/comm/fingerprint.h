// fingerprint.h: what a rank says about the collective it is running. It travels with the data
// where ddp4j moves the data itself (in the small all-reduce's message header, in the
// shared-memory transport's slot descriptor), and in one small message ahead of Gloo's own
// collectives, so that ranks that called different collectives fail, each naming its own call
// and the peer's, instead of mixing their data.
#pragma once
#include <cstdint>
#include <string>

#include "ddp4j/errors.h"

namespace ddp4j {

/** One rank's description of one collective of a process group; ranks compare theirs field by field (same_call). */
struct Fingerprint {
  enum Kind : uint32_t {
    kNone = 0,
    kAllReduce = 1,
    kBroadcast = 2,
    kAllGather = 3,
    kBarrier = 4,
    kReduce = 5,
    kReduceScatter = 6,
    kSend = 7,  // point to point: seq counts the sends from this rank to `peer` with this tag
    kRecv = 8,  // point to point: seq counts the recvs on this rank from `peer` with this tag
  };

  uint64_t seq = 0;     // the group's collective number, from 1 (ranks that issued the same collectives agree)
  uint64_t numel = 0;   // elements per rank (reduce-scatter: the input's, size() x the output's)
  uint32_t kind = kNone;
  uint32_t arg = 0;     // all-reduce, reduce, reduce-scatter: ReduceOp; broadcast: root rank; send, recv: tag
  uint32_t dtype = 0;   // DType
  int32_t bucket = -1;  // DDP's bucket index (0-based), -1 for any other collective
  int32_t buckets = 0;  // DDP's number of buckets (0 for any other collective)
  uint32_t peer = 0;    // reduce: the root; send: the destination; recv: the source; otherwise 0

  bool present() const { return kind != kNone; }
};
static_assert(sizeof(Fingerprint) == 40, "a fixed wire and shared-memory layout");

/** Whether two ranks called the same collective. */
bool same_call(const Fingerprint& a, const Fingerprint& b);

/**
 * Whether `send` (kind kSend, on rank `sender`) and `recv` (kind kRecv, on rank `receiver`) are
 * two ends of one transfer: each names the other rank, same tag, same number in that stream,
 * same dtype and element count.
 */
bool same_transfer(const Fingerprint& send, int sender, const Fingerprint& recv, int receiver);

/**
 * The call in words, e.g. "allReduce(AVG) of 1,234 float32 elements (#57, DDP bucket 2 of 3)",
 * "broadcast from rank 0 of 10 int64 elements (#3)", "barrier (#5)". The bucket is shown 1-based.
 */
std::string describe(const Fingerprint& f);

/**
 * The error a rank reports when a peer's fingerprint differs from its own: its own call and rank
 * first, then "a peer called a different collective", the peer (e.g. "rank 1" or "rank 1 (pid
 * 42)") and the peer's call, then what to do. Advice that depends on where the call came from (DDP's
 * join() for uneven inputs) is the caller's, added in Java from the error's facts.
 */
std::string mismatch_message(const Fingerprint& mine, int rank, const std::string& peer, const Fingerprint& theirs);

/** The facts of a call for an error (errors.h's CallFacts), its words included. */
CallFacts call_facts(const Fingerprint& f);

/**
 * The Error(Mismatch) a rank throws when peer rank `peer_rank` (named `peer` in the message, e.g.
 * "rank 1 (pid 42)") called `theirs` where this rank called `mine`: mismatch_message with both
 * calls, the op and the ranks as facts. `transport`: "gloo" or "shared memory".
 */
Error mismatch_error(const Fingerprint& mine, int rank, int peer_rank, const std::string& peer,
                     const Fingerprint& theirs, const char* transport);

/** The Error(Mismatch) of a point-to-point transfer: transfer_mismatch_message with the facts. */
Error transfer_mismatch_error(const Fingerprint& mine, int rank, const Fingerprint& theirs, int peer);

/**
 * The error both ends of a point-to-point transfer report when their calls do not match
 * (same_transfer false): this rank's call, the peer's, and what must agree.
 */
std::string transfer_mismatch_message(const Fingerprint& mine, int rank, const Fingerprint& theirs, int peer);

}  // namespace ddp4j
