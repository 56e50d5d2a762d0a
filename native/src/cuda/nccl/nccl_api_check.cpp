// Compiled only when CMake finds a real nccl.h (never linked into anything): checks that the
// hand-written declarations of nccl_api.h match NCCL's, so that calls through dlsym'd pointers
// use NCCL's ABI. Enum values, the layout of the structs we pass, and each function's type.
#include <nccl.h>

#include <cstddef>
#include <type_traits>

#include "cuda/nccl/nccl_api.h"

namespace n = ddp4j::nccl;

// ---- enum values and sizes
static_assert(sizeof(n::Result) == sizeof(ncclResult_t), "ncclResult_t size");
static_assert(n::kSuccess == static_cast<int>(ncclSuccess), "ncclSuccess");
static_assert(n::kUnhandledCudaError == static_cast<int>(ncclUnhandledCudaError), "ncclUnhandledCudaError");
static_assert(n::kSystemError == static_cast<int>(ncclSystemError), "ncclSystemError");
static_assert(n::kInternalError == static_cast<int>(ncclInternalError), "ncclInternalError");
static_assert(n::kInvalidArgument == static_cast<int>(ncclInvalidArgument), "ncclInvalidArgument");
static_assert(n::kInvalidUsage == static_cast<int>(ncclInvalidUsage), "ncclInvalidUsage");
static_assert(n::kRemoteError == static_cast<int>(ncclRemoteError), "ncclRemoteError");
static_assert(n::kInProgress == static_cast<int>(ncclInProgress), "ncclInProgress");

static_assert(sizeof(n::DataType) == sizeof(ncclDataType_t), "ncclDataType_t size");
static_assert(n::kInt64 == static_cast<int>(ncclInt64), "ncclInt64");
static_assert(n::kFloat32 == static_cast<int>(ncclFloat32), "ncclFloat32");
static_assert(n::kFloat16 == static_cast<int>(ncclFloat16), "ncclFloat16");
static_assert(n::kBfloat16 == static_cast<int>(ncclBfloat16), "ncclBfloat16");

static_assert(sizeof(n::RedOp) == sizeof(ncclRedOp_t), "ncclRedOp_t size");
static_assert(n::kSum == static_cast<int>(ncclSum), "ncclSum");
static_assert(n::kProd == static_cast<int>(ncclProd), "ncclProd");
static_assert(n::kMax == static_cast<int>(ncclMax), "ncclMax");
static_assert(n::kMin == static_cast<int>(ncclMin), "ncclMin");
static_assert(n::kAvg == static_cast<int>(ncclAvg), "ncclAvg");

// ---- constants
static_assert(n::kUniqueIdBytes == NCCL_UNIQUE_ID_BYTES, "NCCL_UNIQUE_ID_BYTES");
static_assert(n::kApiMagic == NCCL_API_MAGIC, "NCCL_API_MAGIC");
static_assert(n::kConfigUndefInt == NCCL_CONFIG_UNDEF_INT, "NCCL_CONFIG_UNDEF_INT");
static_assert(n::version_code(2, 8, 4) == NCCL_VERSION(2, 8, 4), "NCCL_VERSION, old encoding");
static_assert(n::version_code(2, 14, 0) == NCCL_VERSION(2, 14, 0), "NCCL_VERSION, new encoding");
static_assert(NCCL_VERSION_CODE >= n::kMinVersion, "this nccl.h is older than the oldest NCCL ddp4j accepts");

// ---- struct layout: ncclUniqueId whole, ncclConfig_t as a prefix (NCCL appends fields)
static_assert(sizeof(n::UniqueId) == sizeof(ncclUniqueId), "ncclUniqueId size");
static_assert(alignof(n::UniqueId) == alignof(ncclUniqueId), "ncclUniqueId alignment");
static_assert(sizeof(n::Config) <= sizeof(ncclConfig_t), "ncclConfig_t prefix");
static_assert(alignof(n::Config) == alignof(ncclConfig_t), "ncclConfig_t alignment");
static_assert(offsetof(n::Config, size) == offsetof(ncclConfig_t, size), "ncclConfig_t.size");
static_assert(offsetof(n::Config, magic) == offsetof(ncclConfig_t, magic), "ncclConfig_t.magic");
static_assert(offsetof(n::Config, version) == offsetof(ncclConfig_t, version), "ncclConfig_t.version");
static_assert(offsetof(n::Config, blocking) == offsetof(ncclConfig_t, blocking), "ncclConfig_t.blocking");
static_assert(std::is_same_v<decltype(n::Config::size), decltype(ncclConfig_t::size)>, "ncclConfig_t.size type");
static_assert(std::is_same_v<decltype(n::Config::magic), decltype(ncclConfig_t::magic)>, "ncclConfig_t.magic type");
static_assert(std::is_same_v<decltype(n::Config::version), decltype(ncclConfig_t::version)>,
              "ncclConfig_t.version type");
static_assert(std::is_same_v<decltype(n::Config::blocking), decltype(ncclConfig_t::blocking)>,
              "ncclConfig_t.blocking type");

// ---- function types: map each of our types to NCCL's, then compare whole signatures
namespace {

template <typename T>
struct Real {
  using type = T;  // void, int, size_t, cudaStream_t, char, ... are shared
};
template <>
struct Real<n::Result> {
  using type = ncclResult_t;
};
template <>
struct Real<n::DataType> {
  using type = ncclDataType_t;
};
template <>
struct Real<n::RedOp> {
  using type = ncclRedOp_t;
};
template <>
struct Real<n::UniqueId> {
  using type = ncclUniqueId;
};
template <>
struct Real<n::Config> {
  using type = ncclConfig_t;
};
template <typename T>
struct Real<T*> {
  using type = typename Real<T>::type*;
};
template <typename T>
struct Real<const T> {
  using type = const typename Real<T>::type;
};
template <typename R, typename... A>
struct Real<R (*)(A...)> {
  using type = typename Real<R>::type (*)(typename Real<A>::type...);
};

template <typename Ours, typename Theirs>
constexpr bool same_signature = std::is_same_v<typename Real<Ours>::type, Theirs>;

}  // namespace

static_assert(std::is_same_v<n::Comm, ncclComm_t>, "ncclComm_t");
static_assert(same_signature<n::GetVersionFn, decltype(&ncclGetVersion)>, "ncclGetVersion");
static_assert(same_signature<n::GetUniqueIdFn, decltype(&ncclGetUniqueId)>, "ncclGetUniqueId");
static_assert(same_signature<n::CommInitRankConfigFn, decltype(&ncclCommInitRankConfig)>, "ncclCommInitRankConfig");
static_assert(same_signature<n::CommAbortFn, decltype(&ncclCommAbort)>, "ncclCommAbort");
static_assert(same_signature<n::CommDestroyFn, decltype(&ncclCommDestroy)>, "ncclCommDestroy");
static_assert(same_signature<n::CommFinalizeFn, decltype(&ncclCommFinalize)>, "ncclCommFinalize");
static_assert(same_signature<n::CommGetAsyncErrorFn, decltype(&ncclCommGetAsyncError)>, "ncclCommGetAsyncError");
static_assert(same_signature<n::GetErrorStringFn, decltype(&ncclGetErrorString)>, "ncclGetErrorString");
static_assert(same_signature<n::GetLastErrorFn, decltype(&ncclGetLastError)>, "ncclGetLastError");
static_assert(same_signature<n::AllReduceFn, decltype(&ncclAllReduce)>, "ncclAllReduce");
static_assert(same_signature<n::BroadcastFn, decltype(&ncclBroadcast)>, "ncclBroadcast");
static_assert(same_signature<n::AllGatherFn, decltype(&ncclAllGather)>, "ncclAllGather");
static_assert(same_signature<n::ReduceFn, decltype(&ncclReduce)>, "ncclReduce");
static_assert(same_signature<n::ReduceScatterFn, decltype(&ncclReduceScatter)>, "ncclReduceScatter");
static_assert(same_signature<n::SendFn, decltype(&ncclSend)>, "ncclSend");
static_assert(same_signature<n::RecvFn, decltype(&ncclRecv)>, "ncclRecv");
