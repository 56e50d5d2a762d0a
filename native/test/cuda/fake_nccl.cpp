// A stand-in for libnccl.so.2 that nccl_loader_test opens: it exports ncclGetVersion only, returning
// DDP4J_FAKE_NCCL_VERSION (default 2.7.8, older than ddp4j accepts). A version new enough makes the
// loader go on and miss ncclGetUniqueId, which tests that error too. Not NCCL code: a test double.
#include <cstdlib>

extern "C" __attribute__((visibility("default"))) int ncclGetVersion(int* version) {
  const char* v = std::getenv("DDP4J_FAKE_NCCL_VERSION");
  *version = v != nullptr ? std::atoi(v) : 2708;
  return 0;  // ncclSuccess
}
