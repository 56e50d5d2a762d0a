// test_util.h: a minimal check macro for the ctest executables in native/test. Each test file is a
// plain program: CHECK records failures and main returns test_failures() (non-zero on failure).
#pragma once
#include <cmath>
#include <cstdint>
#include <cstdio>

namespace ddp4j::test {
/** SplitMix64's finaliser: a well-spread pseudo-random value from an index, for test data. */
inline uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

inline int& failure_count() {
  static int n = 0;
  return n;
}
}  // namespace ddp4j::test

/** Records a failure (with file and line) when cond is false; the test keeps running. */
#define CHECK(cond)                                                             \
  do {                                                                          \
    if (!(cond)) {                                                              \
      std::fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
      ++::ddp4j::test::failure_count();                                         \
    }                                                                           \
  } while (0)

/** CHECK(|a - b| <= tol), printing both values on failure. */
#define CHECK_NEAR(a, b, tol)                                                                       \
  do {                                                                                              \
    const double va_ = (a), vb_ = (b);                                                              \
    if (!(std::fabs(va_ - vb_) <= (tol))) {                                                         \
      std::fprintf(stderr, "%s:%d: CHECK_NEAR failed: %s = %.9g, %s = %.9g\n", __FILE__, __LINE__, #a, va_, \
                   #b, vb_);                                                                        \
      ++::ddp4j::test::failure_count();                                                             \
    }                                                                                               \
  } while (0)

/** The exit status of a test program: 0 when every check passed. */
inline int test_failures() { return ::ddp4j::test::failure_count() == 0 ? 0 : 1; }
