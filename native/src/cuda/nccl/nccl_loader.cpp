// Opens NCCL with dlopen and resolves the entry points that nccl_api.h declares (nccl_loader.h).
#include "cuda/nccl/nccl_loader.h"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>
#include <optional>

#include "ddp4j/errors.h"

namespace ddp4j::nccl {
namespace {

/** Where NCCL comes from, for error messages. */
constexpr const char* kWhereNcclComes =
    "NCCL comes from the Python package nvidia-nccl-cu13 (pip install nvidia-nccl-cu13; the library is then "
    "<site-packages>/nvidia/nccl/lib/libnccl.so.2) or from Debian/Ubuntu's libnccl2 package (apt-get install "
    "libnccl2)";

std::string dl_error() {
  const char* e = dlerror();
  return e != nullptr ? std::string(e) : std::string("unknown error");
}

template <typename Fn>
Fn resolve(void* handle, const char* name, const std::string& path, const std::string& version) {
  dlerror();  // clear
  void* symbol = dlsym(handle, name);
  if (symbol == nullptr) {
    throw Error(ErrorKind::IllegalState,
                detail::concat("the NCCL library ", path, " (version ", version, ") has no ", name, " (", dl_error(),
                               "): it is not a complete NCCL; point ", kLibraryEnv,
                               " at NCCL's libnccl.so.2 (", kWhereNcclComes, ")"));
  }
  return reinterpret_cast<Fn>(symbol);
}

}  // namespace

std::string version_string(int code) {
  int major, minor, patch;
  if (code >= 10000) {  // NCCL_VERSION for 2.9 and later: X * 10000 + Y * 100 + Z
    major = code / 10000;
    minor = (code % 10000) / 100;
    patch = code % 100;
  } else {  // up to 2.8: X * 1000 + Y * 100 + Z
    major = code / 1000;
    minor = (code % 1000) / 100;
    patch = code % 100;
  }
  return detail::concat(major, ".", minor, ".", patch);
}

std::string Api::version_string() const { return nccl::version_string(version); }

std::string Api::error_string(Result r) const {
  if (r == kSuccess) return std::string();
  const char* s = get_error_string != nullptr ? get_error_string(r) : nullptr;
  return detail::concat(s != nullptr ? s : "unknown NCCL error", " (ncclResult_t ", static_cast<int>(r), ")");
}

Api load_library(const std::string& path) {
  dlerror();
  // RTLD_LOCAL: NCCL's symbols stay out of the global namespace (another copy, e.g. one that a
  // Python runtime in the same process loaded, cannot collide with them).
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* env = std::getenv(kLibraryEnv);
    const bool from_env = env != nullptr && *env != '\0' && path == env;
    throw Error(ErrorKind::IllegalState,
                detail::concat("no NCCL library: cannot open ", path,
                               from_env ? detail::concat(" (from ", kLibraryEnv, ")")
                                        : detail::concat(" (", kLibraryEnv, " is not set)"),
                               ": ", dl_error(), ". The nccl backend opens NCCL at run time: ", kWhereNcclComes,
                               ". Set ", kLibraryEnv,
                               " to the full path of libnccl.so.2, or add its folder to LD_LIBRARY_PATH"));
  }
  Api api;
  api.path = path;
  api.get_version = resolve<GetVersionFn>(handle, "ncclGetVersion", path, "unknown");
  int code = 0;
  Result r = api.get_version(&code);
  if (r != kSuccess) {
    throw Error(ErrorKind::IllegalState, detail::concat("the NCCL library ", path, ": ncclGetVersion failed (result ",
                                                        static_cast<int>(r), ")"));
  }
  api.version = code;
  const std::string version = nccl::version_string(code);
  if (code < kMinVersion) {
    throw Error(ErrorKind::IllegalState,
                detail::concat("the NCCL library ", path, " is version ", version, ", but ddp4j needs NCCL ",
                               nccl::version_string(kMinVersion),
                               " or newer (non-blocking communicators, which the timeout and abort handling uses). "
                               "Install a newer NCCL and point ",
                               kLibraryEnv, " at it: ", kWhereNcclComes));
  }
  api.get_unique_id = resolve<GetUniqueIdFn>(handle, "ncclGetUniqueId", path, version);
  api.comm_init_rank_config = resolve<CommInitRankConfigFn>(handle, "ncclCommInitRankConfig", path, version);
  api.comm_abort = resolve<CommAbortFn>(handle, "ncclCommAbort", path, version);
  api.comm_destroy = resolve<CommDestroyFn>(handle, "ncclCommDestroy", path, version);
  api.comm_finalize = resolve<CommFinalizeFn>(handle, "ncclCommFinalize", path, version);
  api.comm_get_async_error = resolve<CommGetAsyncErrorFn>(handle, "ncclCommGetAsyncError", path, version);
  api.get_error_string = resolve<GetErrorStringFn>(handle, "ncclGetErrorString", path, version);
  api.get_last_error = resolve<GetLastErrorFn>(handle, "ncclGetLastError", path, version);
  api.all_reduce = resolve<AllReduceFn>(handle, "ncclAllReduce", path, version);
  api.broadcast = resolve<BroadcastFn>(handle, "ncclBroadcast", path, version);
  api.all_gather = resolve<AllGatherFn>(handle, "ncclAllGather", path, version);
  api.reduce = resolve<ReduceFn>(handle, "ncclReduce", path, version);
  api.reduce_scatter = resolve<ReduceScatterFn>(handle, "ncclReduceScatter", path, version);
  api.send = resolve<SendFn>(handle, "ncclSend", path, version);
  api.recv = resolve<RecvFn>(handle, "ncclRecv", path, version);
  return api;
}

const Api& api() {
  static std::mutex mutex;
  static std::optional<Api> loaded;
  std::lock_guard<std::mutex> lock(mutex);
  if (!loaded) {
    const char* env = std::getenv(kLibraryEnv);
    loaded = load_library(env != nullptr && *env != '\0' ? std::string(env) : std::string(kDefaultLibrary));
  }
  return *loaded;
}

}  // namespace ddp4j::nccl
