// nccl_api.h: the part of NCCL's C API that ddp4j uses, declared by hand so that the library can
// be opened at run time with dlopen (nccl_loader.h) instead of linked: one jar then serves CPU-only
// machines and GPU machines, whatever NCCL they have (the pip package nvidia-nccl-cu13, or
// Debian's libnccl2). Every value and type here mirrors NCCL's nccl.h; nccl_api_check.cpp checks
// them against a real nccl.h whenever CMake finds one (enum values, struct layout, function types).
//
// Only what we call is declared. Types live in ddp4j::nccl so they never clash with a real
// nccl.h; the communicator keeps NCCL's own opaque struct name (an incomplete type, compatible
// with nccl.h's forward declaration).
#pragma once
#include <cuda_runtime.h>

#include <climits>
#include <cstddef>

struct ncclComm;  // opaque; nccl.h forward-declares the same struct

namespace ddp4j::nccl {

/** ncclComm_t: a communicator handle. */
using Comm = ::ncclComm*;

/** ncclResult_t. */
enum Result : int {
  kSuccess = 0,
  kUnhandledCudaError = 1,
  kSystemError = 2,
  kInternalError = 3,
  kInvalidArgument = 4,
  kInvalidUsage = 5,
  kRemoteError = 6,
  kInProgress = 7,  // non-blocking communicators: the call continues in the background
};

/** ncclDataType_t (the values we use). */
enum DataType : int {
  kInt64 = 4,
  kFloat16 = 6,
  kFloat32 = 7,
  kBfloat16 = 9,  // since NCCL 2.10
};

/** ncclRedOp_t (the built-in operations). */
enum RedOp : int {
  kSum = 0,
  kProd = 1,
  kMax = 2,
  kMin = 3,
  kAvg = 4,  // since NCCL 2.10
};

/** NCCL_UNIQUE_ID_BYTES: size of the id that rank 0 creates and every rank passes to init. */
constexpr size_t kUniqueIdBytes = 128;

/** ncclUniqueId (passed by value to ncclCommInitRankConfig, so its layout is part of the ABI). */
struct UniqueId {
  char internal[kUniqueIdBytes];
};

/** NCCL_API_MAGIC: marks a config struct as initialised. */
constexpr unsigned int kApiMagic = 0xcafebeef;
/** NCCL_CONFIG_UNDEF_INT: "let NCCL choose" for an int field of Config. */
constexpr int kConfigUndefInt = INT_MIN;

/**
 * The leading fields of ncclConfig_t, as NCCL 2.14 introduced it. NCCL's config is versioned
 * and append-only: it copies min(size, its own sizeof) bytes and, for a `version` older than the
 * release that added a field, uses that field's default. So a prefix with size = sizeof(Config)
 * and version = kConfigVersion is valid for every NCCL >= 2.14, including newer ones.
 */
struct Config {
  size_t size;
  unsigned int magic;
  unsigned int version;
  int blocking;  // 0: calls return ncclInProgress and finish in the background
};

/** NCCL_VERSION(X, Y, Z): the version code ncclGetVersion reports. */
constexpr int version_code(int major, int minor, int patch) {
  return (major <= 2 && minor <= 8) ? major * 1000 + minor * 100 + patch : major * 10000 + minor * 100 + patch;
}

/** The layout version we declare for Config (the release that introduced it). */
constexpr unsigned int kConfigVersion = static_cast<unsigned int>(version_code(2, 14, 0));

/**
 * Oldest NCCL we accept: 2.14 brought ncclConfig_t, non-blocking communicators
 * (ncclCommInitRankConfig with blocking = 0, ncclInProgress from ncclCommGetAsyncError), which
 * the timeout and abort path needs; ncclAvg is older (2.10).
 */
constexpr int kMinVersion = version_code(2, 14, 0);

/** A Config for a communicator whose calls never block the host (blocking = 0). */
inline Config nonblocking_config() {
  return Config{sizeof(Config), kApiMagic, kConfigVersion, 0};
}

// Function types, one per entry point we resolve with dlsym (same names as nccl.h without "ncclXxx").
using GetVersionFn = Result (*)(int* version);
using GetUniqueIdFn = Result (*)(UniqueId* unique_id);
using CommInitRankConfigFn = Result (*)(Comm* comm, int nranks, UniqueId comm_id, int rank, Config* config);
using CommAbortFn = Result (*)(Comm comm);
using CommDestroyFn = Result (*)(Comm comm);
using CommFinalizeFn = Result (*)(Comm comm);
using CommGetAsyncErrorFn = Result (*)(Comm comm, Result* async_error);
using GetErrorStringFn = const char* (*)(Result result);
using GetLastErrorFn = const char* (*)(Comm comm);
using AllReduceFn = Result (*)(const void* sendbuff, void* recvbuff, size_t count, DataType datatype, RedOp op,
                               Comm comm, cudaStream_t stream);
using BroadcastFn = Result (*)(const void* sendbuff, void* recvbuff, size_t count, DataType datatype, int root,
                               Comm comm, cudaStream_t stream);
using AllGatherFn = Result (*)(const void* sendbuff, void* recvbuff, size_t sendcount, DataType datatype, Comm comm,
                               cudaStream_t stream);
using ReduceFn = Result (*)(const void* sendbuff, void* recvbuff, size_t count, DataType datatype, RedOp op, int root,
                            Comm comm, cudaStream_t stream);
using ReduceScatterFn = Result (*)(const void* sendbuff, void* recvbuff, size_t recvcount, DataType datatype, RedOp op,
                                   Comm comm, cudaStream_t stream);
/** Point-to-point (NCCL 2.7 and later): `peer` is a rank of the communicator; no tags. */
using SendFn = Result (*)(const void* sendbuff, size_t count, DataType datatype, int peer, Comm comm,
                          cudaStream_t stream);
using RecvFn = Result (*)(void* recvbuff, size_t count, DataType datatype, int peer, Comm comm, cudaStream_t stream);

}  // namespace ddp4j::nccl
