// Fingerprints of collectives: comparison and messages (see fingerprint.h).
#include "comm/fingerprint.h"

#include <cstring>

#include "ddp4j/errors.h"
#include "ddp4j/process_group.h"
#include "ddp4j/tensor.h"

namespace ddp4j {
namespace {

/** 1234567 -> "1,234,567": element counts of DDP buckets are long. */
std::string grouped(uint64_t n) {
  std::string digits = std::to_string(n);
  std::string out;
  for (size_t i = 0; i < digits.size(); i++) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string elements(const Fingerprint& f) {
  // A peer's fingerprint is read from the wire: never index a name table with it unchecked.
  const char* dtype = f.dtype < static_cast<uint32_t>(kNumDTypes) ? dtype_name(static_cast<DType>(f.dtype)) : "?";
  return detail::concat(grouped(f.numel), " ", dtype, f.numel == 1 ? " element" : " elements");
}

const char* op_name(uint32_t op) {
  return op < static_cast<uint32_t>(kNumReduceOps) ? reduce_op_name(static_cast<ReduceOp>(op)) : "?";
}

}  // namespace

bool same_call(const Fingerprint& a, const Fingerprint& b) {
  return a.seq == b.seq && a.numel == b.numel && a.kind == b.kind && a.arg == b.arg && a.dtype == b.dtype &&
         a.bucket == b.bucket && a.buckets == b.buckets && a.peer == b.peer;
}

bool same_transfer(const Fingerprint& send, int sender, const Fingerprint& recv, int receiver) {
  return send.kind == Fingerprint::kSend && recv.kind == Fingerprint::kRecv &&
         send.peer == static_cast<uint32_t>(receiver) && recv.peer == static_cast<uint32_t>(sender) &&
         send.arg == recv.arg && send.seq == recv.seq && send.dtype == recv.dtype && send.numel == recv.numel;
}

std::string describe(const Fingerprint& f) {
  std::string what;
  switch (f.kind) {
    case Fingerprint::kAllReduce:
      what = detail::concat("allReduce(", op_name(f.arg), ") of ", elements(f));
      break;
    case Fingerprint::kBroadcast: what = detail::concat("broadcast from rank ", f.arg, " of ", elements(f)); break;
    case Fingerprint::kAllGather: what = detail::concat("allGather of ", elements(f), " per rank"); break;
    case Fingerprint::kBarrier: what = "barrier"; break;
    case Fingerprint::kReduce:
      what = detail::concat("reduce(", op_name(f.arg), ") to rank ", f.peer, " of ", elements(f));
      break;
    case Fingerprint::kReduceScatter:
      what = detail::concat("reduceScatter(", op_name(f.arg), ") of ", elements(f));
      break;
    case Fingerprint::kSend:
    case Fingerprint::kRecv:
      // "send #3 to rank 1 with tag 0 of 10 float32 elements": the number counts this stream only.
      return detail::concat(f.kind == Fingerprint::kSend ? "send #" : "recv #", f.seq,
                            f.kind == Fingerprint::kSend ? " to rank " : " from rank ", f.peer, " with tag ", f.arg,
                            " of ", elements(f));
    default: return detail::concat("an unknown collective (kind ", f.kind, ")");
  }
  std::string tags = f.seq > 0 ? detail::concat("#", f.seq) : std::string();
  if (f.bucket >= 0) {
    tags += detail::concat(tags.empty() ? "" : ", ", "DDP bucket ", f.bucket + 1, " of ", f.buckets);
  }
  return tags.empty() ? what : detail::concat(what, " (", tags, ")");
}

std::string mismatch_message(const Fingerprint& mine, int rank, const std::string& peer, const Fingerprint& theirs) {
  return detail::concat(describe(mine), " on rank ", rank, ": a peer called a different collective: ", peer,
                        " called ", describe(theirs),
                        ". Every rank must call the same collectives in the same order, with tensors of the same"
                        " dtype and number of elements; this call's result was not used (the tensor's contents are"
                        " undefined)");
}

CallFacts call_facts(const Fingerprint& f) {
  CallFacts c;
  c.present = f.present();
  c.seq = f.seq;
  c.numel = f.numel;
  c.kind = f.kind;
  c.arg = f.arg;
  c.dtype = f.dtype;
  c.bucket = f.bucket;
  c.buckets = f.buckets;
  c.peer = f.peer;
  if (c.present) c.text = describe(f);
  return c;
}

namespace {
/** The facts of a disagreement between this rank's call `mine` and peer rank `peer`'s `theirs`. */
ErrorFacts mismatch_facts(const Fingerprint& mine, int rank, int peer, const Fingerprint& theirs,
                          const char* transport) {
  ErrorFacts facts;
  facts.op = describe(mine);
  facts.transport = transport;
  facts.rank = rank;
  facts.peer = peer;
  facts.seq = mine.seq;
  facts.mine = call_facts(mine);
  facts.theirs = call_facts(theirs);
  return facts;
}
}  // namespace

Error mismatch_error(const Fingerprint& mine, int rank, int peer_rank, const std::string& peer,
                     const Fingerprint& theirs, const char* transport) {
  return Error(ErrorKind::Mismatch, mismatch_message(mine, rank, peer, theirs),
               mismatch_facts(mine, rank, peer_rank, theirs, transport));
}

std::string transfer_mismatch_message(const Fingerprint& mine, int rank, const Fingerprint& theirs, int peer) {
  const bool sending = mine.kind == Fingerprint::kSend;
  return detail::concat(describe(mine), " on rank ", rank, ": rank ", peer, "'s matching call is ",
                        theirs.present() ? describe(theirs) : std::string("missing"),
                        ". A send and the recv that takes it must name each other's rank and the same tag, and pass"
                        " tensors of the same dtype and number of elements; sends from one rank to another with one tag"
                        " are received in the order they were sent. Nothing was transferred (",
                        sending ? "the receiver's" : "this", " tensor is unchanged)");
}

Error transfer_mismatch_error(const Fingerprint& mine, int rank, const Fingerprint& theirs, int peer) {
  return Error(ErrorKind::Mismatch, transfer_mismatch_message(mine, rank, theirs, peer),
               mismatch_facts(mine, rank, peer, theirs, "gloo"));
}

}  // namespace ddp4j
