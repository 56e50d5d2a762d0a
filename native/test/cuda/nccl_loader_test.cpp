// The NCCL loader's errors, which need neither a GPU nor NCCL: a library that does not exist, an
// NCCL that is too old, and one that lacks an entry point (both from the fake library that CMake
// builds next to this test, DDP4J_FAKE_NCCL_PATH). With a real NCCL on the machine it also checks
// that the default library loads and reports a version.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "cuda/nccl/nccl_loader.h"
#include "ddp4j/errors.h"
#include "test_util.h"

using namespace ddp4j;

namespace {

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

/** The message of the Error that f throws ("" and a failed check if it throws none). */
template <typename F>
std::string error_of(F f, ErrorKind expected) {
  try {
    f();
  } catch (const Error& e) {
    CHECK(e.kind() == expected);
    return e.what();
  }
  CHECK(!"an Error was expected");
  return std::string();
}

void test_version_codes() {
  CHECK(nccl::version_code(2, 8, 4) == 2804);
  CHECK(nccl::version_code(2, 14, 0) == 21400);
  CHECK(nccl::version_code(2, 28, 5) == 22805);
  CHECK(nccl::version_string(2804) == "2.8.4");
  CHECK(nccl::version_string(21400) == "2.14.0");
  CHECK(nccl::version_string(22805) == "2.28.5");
  CHECK(nccl::kMinVersion == 21400);
}

void test_missing_library() {
  setenv(nccl::kLibraryEnv, "/nonexistent/libnccl.so.2", 1);
  std::string m = error_of([] { nccl::api(); }, ErrorKind::IllegalState);
  std::fprintf(stderr, "missing library: %s\n", m.c_str());
  CHECK(contains(m, "no NCCL library"));
  CHECK(contains(m, "DDP4J_NCCL_LIBRARY"));
  CHECK(contains(m, "/nonexistent/libnccl.so.2"));
  CHECK(contains(m, "nvidia-nccl-cu13"));
  CHECK(contains(m, "libnccl2"));
  CHECK(contains(m, "No such file"));  // dlopen's own message
  // Not cached: a later call tries again (and fails again the same way).
  CHECK(contains(error_of([] { nccl::api(); }, ErrorKind::IllegalState), "/nonexistent/libnccl.so.2"));
  unsetenv(nccl::kLibraryEnv);
}

void test_too_old() {
  setenv("DDP4J_FAKE_NCCL_VERSION", "2708", 1);
  std::string m = error_of([] { nccl::load_library(DDP4J_FAKE_NCCL_PATH); }, ErrorKind::IllegalState);
  std::fprintf(stderr, "too old: %s\n", m.c_str());
  CHECK(contains(m, "2.7.8"));
  CHECK(contains(m, "2.14.0"));
  CHECK(contains(m, DDP4J_FAKE_NCCL_PATH));
  CHECK(contains(m, "DDP4J_NCCL_LIBRARY"));
  CHECK(contains(m, "nvidia-nccl-cu13"));

  setenv("DDP4J_FAKE_NCCL_VERSION", "21305", 1);  // 2.13.5: just below
  CHECK(contains(error_of([] { nccl::load_library(DDP4J_FAKE_NCCL_PATH); }, ErrorKind::IllegalState), "2.13.5"));

  // Through the environment variable, as the JVM would see it.
  setenv(nccl::kLibraryEnv, DDP4J_FAKE_NCCL_PATH, 1);
  CHECK(contains(error_of([] { nccl::api(); }, ErrorKind::IllegalState), "is version 2.13.5"));
  unsetenv(nccl::kLibraryEnv);
}

void test_missing_entry_point() {
  setenv("DDP4J_FAKE_NCCL_VERSION", "22805", 1);  // new enough: the loader goes on and misses the rest
  std::string m = error_of([] { nccl::load_library(DDP4J_FAKE_NCCL_PATH); }, ErrorKind::IllegalState);
  std::fprintf(stderr, "incomplete: %s\n", m.c_str());
  CHECK(contains(m, "ncclGetUniqueId"));
  CHECK(contains(m, "2.28.5"));
  unsetenv("DDP4J_FAKE_NCCL_VERSION");
}

void test_real_nccl_if_present() {
  try {
    const nccl::Api& api = nccl::api();
    std::fprintf(stderr, "NCCL %s from %s\n", api.version_string().c_str(), api.path.c_str());
    CHECK(api.version >= nccl::kMinVersion);
    CHECK(api.all_reduce != nullptr && api.comm_abort != nullptr && api.comm_get_async_error != nullptr);
    CHECK(api.reduce != nullptr && api.reduce_scatter != nullptr && api.send != nullptr && api.recv != nullptr);
  } catch (const Error& e) {
    std::fprintf(stderr, "no real NCCL here (%s): skipped that part\n", e.what());
  }
}

}  // namespace

int main() {
  test_version_codes();
  test_missing_library();
  test_too_old();
  test_missing_entry_point();
  test_real_nccl_if_present();
  return test_failures();
}
