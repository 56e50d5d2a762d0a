// nccl_loader.h: opens NCCL at run time (dlopen) and resolves the entry points of nccl_api.h.
// The library is DDP4J_NCCL_LIBRARY when set (a path or a file name), else libnccl.so.2 from the
// loader's search path (LD_LIBRARY_PATH, ld.so.cache). Needs no GPU: nothing here touches CUDA.
#pragma once
#include <string>

#include "cuda/nccl/nccl_api.h"

namespace ddp4j::nccl {

/** The environment variable that names the NCCL library to open. */
constexpr const char* kLibraryEnv = "DDP4J_NCCL_LIBRARY";
/** The file opened when kLibraryEnv is unset: NCCL's soname. */
constexpr const char* kDefaultLibrary = "libnccl.so.2";

/** NCCL's entry points, resolved from one opened library. Plain function pointers: copyable, thread-safe to call. */
struct Api {
  std::string path;  // what was passed to dlopen
  int version = 0;   // ncclGetVersion's code, e.g. 22805 for 2.28.5
  GetVersionFn get_version = nullptr;
  GetUniqueIdFn get_unique_id = nullptr;
  CommInitRankConfigFn comm_init_rank_config = nullptr;
  CommAbortFn comm_abort = nullptr;
  CommDestroyFn comm_destroy = nullptr;
  CommFinalizeFn comm_finalize = nullptr;
  CommGetAsyncErrorFn comm_get_async_error = nullptr;
  GetErrorStringFn get_error_string = nullptr;
  GetLastErrorFn get_last_error = nullptr;
  AllReduceFn all_reduce = nullptr;
  BroadcastFn broadcast = nullptr;
  AllGatherFn all_gather = nullptr;
  ReduceFn reduce = nullptr;
  ReduceScatterFn reduce_scatter = nullptr;
  SendFn send = nullptr;
  RecvFn recv = nullptr;

  /** "2.28.5" */
  std::string version_string() const;
  /** "unhandled cuda error (run with NCCL_DEBUG=INFO for details)" etc.; "" for kSuccess. */
  std::string error_string(Result r) const;
};

/**
 * Opens `path` with dlopen, checks ncclGetVersion against kMinVersion and resolves every entry
 * point. Each call opens the library anew (dlopen reference-counts it); the library is never
 * closed, since NCCL keeps threads running. Throws ddp4j::Error(IllegalState) when the library
 * cannot be opened (naming kLibraryEnv, the path, where NCCL comes from, and dlopen's message),
 * is older than kMinVersion (naming both versions), or lacks an entry point (naming it).
 */
Api load_library(const std::string& path);

/**
 * The process's NCCL: load_library(getenv(kLibraryEnv) or kDefaultLibrary), done once; a failure
 * is not cached (the next call tries again, so that fixing the environment in a long-lived JVM
 * works) and throws as load_library does.
 */
const Api& api();

/** "2.28.5" for a version code (either encoding of NCCL_VERSION). */
std::string version_string(int code);

}  // namespace ddp4j::nccl
