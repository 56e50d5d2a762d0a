// test_util.h: a tiny check macro for the ctest executables. Each test's main() returns
// test_result(): non-zero when any CHECK failed.
#pragma once
#include <cmath>
#include <cstdio>

inline int& test_failures() {
  static int failures = 0;
  return failures;
}

#define CHECK(cond)                                                                  \
  do {                                                                               \
    if (!(cond)) {                                                                   \
      std::fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
      ++test_failures();                                                             \
    }                                                                                \
  } while (0)

#define CHECK_NEAR(a, b, tol) CHECK(std::fabs(static_cast<double>(a) - static_cast<double>(b)) <= (tol))

inline int test_result() {
  if (test_failures() == 0) std::printf("OK\n");
  return test_failures() == 0 ? 0 : 1;
}
