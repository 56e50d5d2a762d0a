// errors.h: the one exception type that native code throws. The JNI layer turns each kind into a
// Java exception class, with the error's facts as its fields, so no C++ exception ever crosses JNI
// and no Java code has to read a message to learn what happened.
#pragma once
#include <cstdint>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace ddp4j {

/** What went wrong, which decides the Java exception class the JNI layer throws. */
enum class ErrorKind {
  InvalidArgument,  // java.lang.IllegalArgumentException: bad shapes, dtypes, values
  IllegalState,     // java.lang.IllegalStateException: closed tensor, uninitialised group
  Distributed,      // org.ddp4j.distributed.DistributedException: peer died, size mismatch
  Timeout,          // org.ddp4j.distributed.DistributedTimeoutException
  OutOfMemory,      // java.lang.OutOfMemoryError (native allocation failed)
  Runtime,          // java.lang.RuntimeException: anything else
  Mismatch,         // org.ddp4j.distributed.CollectiveMismatchException: ranks called different collectives
  PeerLost,         // org.ddp4j.distributed.PeerLostException: a peer's process or connection went away
};

/** Why a peer was lost (Java's PeerLostException.Reason, same order). */
enum class PeerLoss : int32_t {
  Closed = 0,   // its connection closed; whether it exited or was killed is not known here
  Exited = 1,   // its program ended (main returned, System.exit, SIGTERM) or it closed its group
  Killed = 2,   // its process ended without exiting: kill -9, the out-of-memory killer, a crash
};

/** One rank's collective call as an error reports it: a Fingerprint's fields (comm/fingerprint.h) and its words. */
struct CallFacts {
  bool present = false;
  uint64_t seq = 0;
  uint64_t numel = 0;
  uint32_t kind = 0;
  uint32_t arg = 0;
  uint32_t dtype = 0;
  int32_t bucket = -1;
  int32_t buckets = 0;
  uint32_t peer = 0;
  std::string text;  // e.g. "allReduce(AVG) of 1,234 float32 elements (#57, DDP bucket 2 of 3)"
};

/**
 * What a distributed error knows, beside its message: the Java exception's fields. Unknown
 * numbers stay at their defaults (-1, 0); the message is built from the same facts where the
 * error is made.
 */
struct ErrorFacts {
  std::string op;             // the operation in words (Work::description), "" when none
  std::string transport;      // "gloo", "shared memory", "nccl", "store", "" when none
  int rank = -1;              // this rank in its group
  int peer = -1;              // the peer rank the error is about: lost, waited for, or the mismatch's
  int64_t peer_pid = 0;       // its pid, 0 when unknown
  PeerLoss loss = PeerLoss::Closed;
  uint64_t seq = 0;           // the group's collective number, 0 when unknown
  int64_t timeout_ms = -1;    // how long it waited (a timeout), -1 when not a timeout
  bool packet_loss = false;   // the connection to `peer` is losing packets (TCP's retransmissions)
  CallFacts mine;             // a mismatch: this rank's call
  CallFacts theirs;           // a mismatch: the peer's call
};

/** A native error with a message meant for the user: what failed and how to fix it. */
class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
  Error(ErrorKind kind, const std::string& message, ErrorFacts facts)
      : std::runtime_error(message), kind_(kind), facts_(std::move(facts)) {}
  ErrorKind kind() const { return kind_; }
  const ErrorFacts& facts() const { return facts_; }
  /** For the code that learns more after making the error (e.g. whether a closed peer exited). */
  ErrorFacts& facts() { return facts_; }

 private:
  ErrorKind kind_;
  ErrorFacts facts_;
};

namespace detail {
template <typename... Args>
std::string concat(const Args&... args) {
  std::ostringstream out;
  (out << ... << args);
  return out.str();
}
}  // namespace detail

}  // namespace ddp4j

/** Throws ddp4j::Error(kind, message parts...) when cond is false. */
#define DDP4J_CHECK(cond, kind, ...)                                         \
  do {                                                                       \
    if (!(cond)) {                                                           \
      throw ::ddp4j::Error(::ddp4j::ErrorKind::kind, ::ddp4j::detail::concat(__VA_ARGS__)); \
    }                                                                        \
  } while (0)

/** Shorthand for argument checks (IllegalArgumentException in Java). */
#define DDP4J_CHECK_ARG(cond, ...) DDP4J_CHECK(cond, InvalidArgument, __VA_ARGS__)
