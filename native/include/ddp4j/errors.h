// errors.h: the one exception type that native code throws. The JNI layer turns each kind into a
// Java exception class, so no C++ exception ever crosses JNI.
#pragma once
#include <sstream>
#include <stdexcept>
#include <string>

namespace ddp4j {

/** What went wrong, which decides the Java exception class the JNI layer throws. */
enum class ErrorKind {
  InvalidArgument,  // java.lang.IllegalArgumentException: bad shapes, dtypes, values
  IllegalState,     // java.lang.IllegalStateException: closed tensor, uninitialised group
  Distributed,      // org.ddp4j.distributed.DistributedException: peer died, size mismatch
  Timeout,          // org.ddp4j.distributed.DistributedTimeoutException
  OutOfMemory,      // java.lang.OutOfMemoryError (native allocation failed)
  Runtime,          // java.lang.RuntimeException: anything else
};

/** A native error with a message meant for the user: what failed and how to fix it. */
class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
  ErrorKind kind() const { return kind_; }

 private:
  ErrorKind kind_;
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
