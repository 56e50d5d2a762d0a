// The NCCL backend (nccl_process_group.h): non-blocking communicator, collectives on the
// communication stream between events, a watchdog that completes works and aborts on errors.
#include "cuda/nccl/nccl_process_group.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <sstream>

#include "cuda/cuda_context.h"

namespace ddp4j {
namespace {

using Clock = std::chrono::steady_clock;
using Millis = std::chrono::milliseconds;

std::string size_str(int64_t numel, DType dtype) {
  const int64_t bytes = numel * static_cast<int64_t>(dtype_size(dtype));
  return detail::concat(numel, " ", dtype_name(dtype), numel == 1 ? " element (" : " elements (", bytes,
                        bytes == 1 ? " byte)" : " bytes)");
}

nccl::DataType nccl_type(DType dtype) {
  switch (dtype) {
    case DType::Float32: return nccl::kFloat32;
    case DType::Int64: return nccl::kInt64;
  }
  throw Error(ErrorKind::InvalidArgument, "nccl: unsupported dtype");
}

nccl::RedOp nccl_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::SUM: return nccl::kSum;
    case ReduceOp::AVG: return nccl::kAvg;
    case ReduceOp::PRODUCT: return nccl::kProd;
    case ReduceOp::MIN: return nccl::kMin;
    case ReduceOp::MAX: return nccl::kMax;
  }
  throw Error(ErrorKind::InvalidArgument, "nccl: unknown ReduceOp");
}

/** Whether the bytes of `a` and `b` overlap. */
bool overlaps(const Tensor& a, const Tensor& b) {
  const char* a0 = static_cast<const char*>(a.raw_data());
  const char* b0 = static_cast<const char*>(b.raw_data());
  return a.nbytes() > 0 && b.nbytes() > 0 && a0 < b0 + b.nbytes() && b0 < a0 + a.nbytes();
}

/**
 * Appended to the watchdog's timeout message when a send or recv times out: NCCL matches them
 * by order alone and cannot tell a mismatch from a slow peer.
 */
constexpr const char* kPointToPointTimeoutHint =
    ". For send/recv: the peer must post the matching recv/send with the same number of elements and dtype "
    "(NCCL ignores tags and matches by order), and two ranks that both send to each other before receiving "
    "can deadlock: let one rank send first and the other receive first.";

/** Sleeps a little longer each time, from a yield up to 1 ms: short collectives are seen at once, long ones cost no CPU. */
class Backoff {
 public:
  void pause() {
    if (round_ < 64) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(round_ < 256 ? 20 : 1000));
    }
    round_++;
  }

 private:
  int round_ = 0;
};

NcclOptions with_bounded_timeout(NcclOptions options) {
  options.timeout = std::min(options.timeout, kMaxNcclTimeout);
  return options;
}

std::exception_ptr aborted_error(const NcclAbortState& state, const std::string& description) {
  std::string reason;
  {
    std::lock_guard<std::mutex> lock(const_cast<NcclAbortState&>(state).mutex);
    reason = state.reason;
  }
  return std::make_exception_ptr(Error(
      ErrorKind::Distributed,
      detail::concat(description, " did not complete: the NCCL communicator was aborted (", reason,
                     "); its result is undefined. Destroy the process group and create a new one")));
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// NcclWork

NcclWork::NcclWork(std::string description, int device, cudaEvent_t end, std::vector<Tensor> tensors,
                   bool blocking_sync, std::shared_ptr<NcclAbortState> abort_state, std::string timeout_hint)
    : Work(std::move(description)),
      device_(device),
      timeout_hint_(std::move(timeout_hint)),
      end_(end),
      blocking_sync_(blocking_sync),
      abort_state_(std::move(abort_state)),
      tensors_(std::move(tensors)) {}

NcclWork::~NcclWork() {
  // Safe while the event is still pending: CUDA releases it once it completes.
  if (end_ != nullptr) cudaEventDestroy(end_);
}

bool NcclWork::poll_gpu() {
  if (gpu_done_.load()) return true;
  cudaError_t e = cudaEventQuery(end_);
  if (e == cudaErrorNotReady) return false;
  std::vector<Tensor> release;
  {
    std::lock_guard<std::mutex> lock(tensors_mutex_);
    if (gpu_done_.load()) return true;
    if (e != cudaSuccess) {
      cudaGetLastError();
      gpu_error_ = std::make_exception_ptr(
          Error(ErrorKind::Distributed, detail::concat(description(), " failed on cuda:", device_, ": ",
                                                       cudaGetErrorString(e), " (", cudaGetErrorName(e), ")")));
    }
    release.swap(tensors_);
    gpu_done_.store(true);
  }
  return true;  // `release` drops the tensors here, outside the lock
}

void NcclWork::complete_from_gpu() {
  // The end event completed. After an abort NCCL's kernels end early, so the data is garbage:
  // report the abort rather than success.
  if (abort_state_->aborted.load()) {
    finish(aborted_error(*abort_state_, description()));
    return;
  }
  std::exception_ptr error;
  {
    std::lock_guard<std::mutex> lock(tensors_mutex_);
    error = gpu_error_;
  }
  finish(error);
}

bool NcclWork::is_completed() {
  if (Work::is_completed()) return true;
  if (!poll_gpu()) return false;
  complete_from_gpu();
  return true;
}

void NcclWork::wait(Millis timeout) {
  timeout = std::min(timeout, kMaxNcclTimeout);
  const auto deadline = Clock::now() + timeout;
  Backoff backoff;
  while (!Work::is_completed()) {
    if (poll_gpu()) {
      complete_from_gpu();
      break;
    }
    if (timeout.count() > 0 && Clock::now() >= deadline) {
      throw Error(ErrorKind::Timeout,
                  detail::concat(description(), " did not complete within ", duration_str(timeout),
                                 " (the wait's timeout); it is still running on cuda:", device_,
                                 ": a peer may be slow, stuck, or calling a different collective"));
    }
    backoff.pause();
  }
  Work::wait();  // done: rethrows the error, if any
}

void NcclWork::synchronize() {
  if (Work::is_completed()) {
    Work::wait();  // rethrows a failure; a success needs no stream wait (the GPU is past the event)
    return;
  }
  if (abort_state_->aborted.load()) {
    // The watchdog fails every pending work right after setting the flag; wait for that verdict.
    wait(Millis(0));
    return;
  }
  if (blocking_sync_) {
    wait(Millis(0));
    return;
  }
  cuda::DeviceGuard guard(device_);
  DDP4J_CUDA_CHECK(cudaStreamWaitEvent(cuda::compute_stream(device_), end_, 0));
}

// ---------------------------------------------------------------------------------------------
// Construction and destruction

nccl::UniqueId NcclProcessGroup::create_unique_id() {
  const nccl::Api& api = nccl::api();
  nccl::UniqueId id;
  std::memset(&id, 0, sizeof(id));
  nccl::Result r = api.get_unique_id(&id);
  DDP4J_CHECK(r == nccl::kSuccess, Distributed, "ncclGetUniqueId failed: ", api.error_string(r),
              " (NCCL needs a usable network interface for its bootstrap; NCCL_SOCKET_IFNAME picks one, "
              "NCCL_DEBUG=INFO shows why)");
  return id;
}

NcclProcessGroup::NcclProcessGroup(const nccl::UniqueId& unique_id, int rank, int size, int device,
                                   NcclOptions options)
    : ProcessGroup(rank, size), api_(nccl::api()), device_(device), options_(with_bounded_timeout(options)) {
  DDP4J_CHECK_ARG(size >= 1, "process group size must be at least 1, got ", size);
  DDP4J_CHECK_ARG(rank >= 0 && rank < size, "rank must be in [0, ", size, "), got ", rank);
  DDP4J_CHECK_ARG(options_.timeout.count() > 0, "process group timeout must be positive, got ",
                  options_.timeout.count(), " ms");
  cuda::check_device_index(device);  // "no CUDA device" / a device that does not exist
  cuda::DeviceGuard guard(device);
  compute_ = cuda::compute_stream(device);

  nccl::Config config = nccl::nonblocking_config();
  nccl::Comm comm = nullptr;
  nccl::Result r = api_.comm_init_rank_config(&comm, size, unique_id, rank, &config);
  if (r != nccl::kSuccess && r != nccl::kInProgress) {
    if (comm != nullptr) api_.comm_abort(comm);
    throw Error(ErrorKind::Distributed, detail::concat("creating the NCCL communicator failed on ", where(), ": ",
                                                       nccl_error(r), " [NCCL ", api_.version_string(), "]"));
  }
  comm_ = comm;
  {
    std::lock_guard<std::mutex> lock(comm_mutex_);
    r = wait_ready(r, "ncclCommInitRankConfig", options_.timeout);
  }
  if (r != nccl::kSuccess) {
    const std::string detail_text = r == nccl::kInProgress ? std::string() : nccl_error(r);
    api_.comm_abort(comm_);
    comm_ = nullptr;
    if (r == nccl::kInProgress) {
      throw Error(ErrorKind::Timeout,
                  detail::concat("creating the NCCL communicator timed out after ", duration_str(options_.timeout),
                                 " on ", where(), ": not every one of the ", size,
                                 " ranks joined (a rank may have failed before creating its group, or the ranks "
                                 "cannot reach each other; NCCL_DEBUG=INFO shows NCCL's view)"));
    }
    throw Error(ErrorKind::Distributed,
                detail::concat("creating the NCCL communicator failed on ", where(), ": ", detail_text));
  }
  try {
    // Its own stream, as PyTorch gives each communicator: groups sharing one stream could
    // serialise behind each other's collectives when ranks issue them in different orders.
    DDP4J_CUDA_CHECK(cudaStreamCreateWithFlags(&comm_stream_, cudaStreamNonBlocking));
    DDP4J_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&barrier_buffer_), sizeof(float)));
    DDP4J_CUDA_CHECK(cudaMemset(barrier_buffer_, 0, sizeof(float)));
  } catch (...) {
    api_.comm_abort(comm_);
    comm_ = nullptr;
    if (barrier_buffer_ != nullptr) cudaFree(barrier_buffer_);
    if (comm_stream_ != nullptr) cudaStreamDestroy(comm_stream_);
    throw;
  }
  watchdog_ = std::thread([this] { watchdog_loop(); });
}

NcclProcessGroup::~NcclProcessGroup() {
  // Let pending collectives finish: the watchdog completes them, or aborts at the timeout.
  {
    std::unique_lock<std::mutex> lock(mutex_);
    cv_.wait(lock, [this] { return pending_.empty() || abort_state_->aborted.load(); });
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (watchdog_.joinable()) watchdog_.join();

  if (comm_ != nullptr) {
    std::lock_guard<std::mutex> lock(comm_mutex_);
    std::unique_ptr<cuda::DeviceGuard> device_guard;
    try {
      device_guard = std::make_unique<cuda::DeviceGuard>(device_);
    } catch (const std::exception&) {
      // a broken context: finalize or abort below still frees NCCL's host resources
    }
    bool clean = false;
    if (!abort_state_->aborted.load()) {
      // ncclCommFinalize flushes NCCL's outstanding work; bounded, since a dead peer could stall it.
      const Millis limit = std::min<Millis>(options_.timeout, Millis(10000));
      nccl::Result r = wait_ready(api_.comm_finalize(comm_), "ncclCommFinalize", limit);
      if (r == nccl::kSuccess) clean = api_.comm_destroy(comm_) == nccl::kSuccess;
    }
    if (!clean) api_.comm_abort(comm_);
    comm_ = nullptr;
  }
  // Tensors of failed works that the GPU may still write: release them once their end events
  // complete. Give that a moment; past it, keep them referenced forever (a leak beats memory
  // that NCCL writes after the caching allocator handed it to someone else).
  std::vector<std::shared_ptr<NcclWork>> draining;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    draining.swap(draining_);
    for (auto& p : pending_) draining.push_back(p.work);
    pending_.clear();
  }
  const auto give_up = Clock::now() + std::chrono::seconds(1);
  for (auto& w : draining) {
    while (!w->poll_gpu() && Clock::now() < give_up) std::this_thread::sleep_for(std::chrono::microseconds(200));
    if (!w->gpu_done()) {
      static auto* leaked = new std::vector<std::shared_ptr<NcclWork>>();
      static std::mutex leaked_mutex;
      std::lock_guard<std::mutex> lock(leaked_mutex);
      leaked->push_back(w);
    }
    w->finish(aborted_error(*abort_state_, w->description()));  // no-op for works already finished
  }
  if (barrier_buffer_ != nullptr) cudaFree(barrier_buffer_);
  if (comm_stream_ != nullptr) cudaStreamDestroy(comm_stream_);  // released once its queued work is done
}

// ---------------------------------------------------------------------------------------------
// Helpers

std::string NcclProcessGroup::where() const {
  return detail::concat("rank ", rank(), " of ", size(), " on cuda:", device_);
}

std::string NcclProcessGroup::nccl_error(nccl::Result r) const {
  std::string text = api_.error_string(r);
  const char* last = comm_ != nullptr && api_.get_last_error != nullptr ? api_.get_last_error(comm_) : nullptr;
  if (last != nullptr && *last != '\0') text += detail::concat(": ", last);
  return text + " (NCCL_DEBUG=INFO shows NCCL's own log)";
}

nccl::Result NcclProcessGroup::wait_ready(nccl::Result first, const std::string& what, Millis limit) {
  // Caller holds comm_mutex_. In non-blocking mode a call may return ncclInProgress and finish in
  // the background; ncclCommGetAsyncError reports ncclInProgress until it has.
  nccl::Result state = first;
  if (state == nccl::kSuccess) {
    if (api_.comm_get_async_error(comm_, &state) != nccl::kSuccess) return nccl::kInternalError;
  }
  const auto deadline = Clock::now() + limit;
  Backoff backoff;
  while (state == nccl::kInProgress) {
    if (abort_requested_.load() || Clock::now() >= deadline) return nccl::kInProgress;
    backoff.pause();
    if (api_.comm_get_async_error(comm_, &state) != nccl::kSuccess) return nccl::kInternalError;
  }
  (void)what;
  return state;
}

void NcclProcessGroup::check_tensor(const char* op, const char* what, const Tensor& t) const {
  DDP4J_CHECK_ARG(t.defined(), op, ": the ", what, " tensor is missing");
  DDP4J_CHECK_ARG(t.device().type == DeviceType::CUDA && t.device().index == device_, op,
                  ": the nccl process group works on tensors on its device cuda:", device_, ", but the ", what, " is ",
                  t.describe(), "; move it with tensor.to(cuda:", device_, ")");
  DDP4J_CHECK_ARG(t.dtype() == DType::Float32 || t.dtype() == DType::Int64, op, ": unsupported dtype of ", what, " ",
                  t.describe(), " (float32 and int64 are supported)");
}

void NcclProcessGroup::check_reduce_op(const char* op_name, ReduceOp op, const Tensor& t) const {
  DDP4J_CHECK_ARG(static_cast<int>(op) >= 0 && static_cast<int>(op) < kNumReduceOps, op_name, ": unknown ReduceOp ",
                  static_cast<int>(op));
  DDP4J_CHECK_ARG(op != ReduceOp::AVG || t.dtype() == DType::Float32, op_name,
                  ": ReduceOp.AVG needs a float32 tensor, got ", t.describe(), "; use SUM and divide by the world size");
}

void NcclProcessGroup::throw_if_aborted(const std::string& description) const {
  if (!abort_state_->aborted.load()) return;
  std::string reason;
  {
    std::lock_guard<std::mutex> lock(abort_state_->mutex);
    reason = abort_state_->reason;
  }
  throw Error(ErrorKind::Distributed,
              detail::concat(description, " cannot run: this process group's NCCL communicator was aborted earlier (",
                             reason,
                             "); destroy it and create a new one (Distributed.destroyProcessGroup, then "
                             "initProcessGroup)"));
}

// ---------------------------------------------------------------------------------------------
// Submission

std::shared_ptr<Work> NcclProcessGroup::launch(std::string description, std::vector<Tensor> tensors,
                                               bool blocking_sync,
                                               const std::function<nccl::Result(cudaStream_t)>& issue,
                                               const std::function<void(cudaStream_t)>& after,
                                               const std::function<void(cudaStream_t)>& before,
                                               std::string timeout_hint) {
  description = detail::concat("NCCL ", description, " on ", where());
  throw_if_aborted(description);
  cuda::DeviceGuard guard(device_);
  cudaEvent_t start = nullptr;
  cudaEvent_t end = nullptr;
  DDP4J_CUDA_CHECK(cudaEventCreateWithFlags(&start, cudaEventDisableTiming));
  cudaError_t e = cudaEventCreateWithFlags(&end, cudaEventDisableTiming);
  if (e != cudaSuccess) {
    cudaEventDestroy(start);
    cuda::throw_cuda_error(e, "cudaEventCreateWithFlags");
  }
  // The work owns `end` from here on; `start` is needed only until the stream wait is queued.
  auto work = std::make_shared<NcclWork>(description, device_, end, std::move(tensors), blocking_sync, abort_state_,
                                         std::move(timeout_hint));
  struct EventGuard {
    cudaEvent_t e;
    ~EventGuard() { cudaEventDestroy(e); }
  } start_guard{start};

  // The collective must see every kernel already queued on the compute stream (the producers of
  // its inputs), so the communication stream waits for this point of the compute stream.
  DDP4J_CUDA_CHECK(cudaEventRecord(start, compute_));
  DDP4J_CUDA_CHECK(cudaStreamWaitEvent(comm_stream_, start, 0));
  std::string failure;  // queueing failed: abort once comm_mutex_ is released (abort takes it)
  ErrorKind failure_kind = ErrorKind::Distributed;
  {
    std::lock_guard<std::mutex> lock(comm_mutex_);
    throw_if_aborted(description);
    // A failed `before` (copies into a temporary) skips the NCCL call: the other ranks then wait
    // for this one until their timeout, so this group aborts as for a failed NCCL call.
    try {
      if (before) before(comm_stream_);
    } catch (const std::exception& e) {
      failure = detail::concat(description, " failed before queueing: ", e.what());
    }
    nccl::Result r = failure.empty() ? issue(comm_stream_) : nccl::kSuccess;
    if (failure.empty() && r == nccl::kInvalidArgument) {
      // NCCL rejected the arguments; a non-blocking communicator keeps that as its error for good
      // (ncclCommGetAsyncError returns it from now on), so the group cannot go on either.
      failure_kind = ErrorKind::InvalidArgument;
      failure = detail::concat(description, " was rejected by NCCL: ", nccl_error(r));
    } else if (failure.empty()) {
      if (r == nccl::kSuccess || r == nccl::kInProgress) r = wait_ready(r, description, options_.timeout);
      try {
        if (r == nccl::kSuccess && after) after(comm_stream_);
      } catch (const std::exception& e) {
        failure = detail::concat(description, " failed after queueing: ", e.what());
      }
      if (r != nccl::kSuccess && failure.empty()) {
        // This rank may now be out of step with the others: nothing later on the communicator
        // could be trusted.
        failure = detail::concat(description, " failed: ",
                                 r == nccl::kInProgress
                                     ? detail::concat("NCCL did not finish queueing it within ",
                                                      duration_str(options_.timeout))
                                     : nccl_error(r));
      }
    }
    // The end event also closes a failed collective: part of it may be queued already, so its
    // tensors stay alive (draining) until the GPU is past it.
    cudaError_t recorded = cudaEventRecord(end, comm_stream_);
    if (recorded != cudaSuccess && failure.empty()) {
      cudaGetLastError();
      failure = detail::concat(description, " failed: cudaEventRecord: ", cudaGetErrorString(recorded));
    }
    std::lock_guard<std::mutex> plock(mutex_);
    if (failure.empty()) {
      pending_.push_back(Pending{work, Clock::now()});
    } else if (recorded == cudaSuccess) {
      draining_.push_back(work);
    }
  }
  if (!failure.empty()) {
    work->finish(std::make_exception_ptr(Error(failure_kind, failure)));
    abort(ErrorKind::Distributed, failure);
    throw Error(failure_kind, failure);
  }
  cv_.notify_all();
  return work;
}

std::shared_ptr<Work> NcclProcessGroup::allreduce(const Tensor& tensor, ReduceOp op) {
  check_tensor("allReduce", "input", tensor);
  check_reduce_op("allReduce", op, tensor);
  const std::string description =
      detail::concat("allReduce(", reduce_op_name(op), ") of ", size_str(tensor.numel(), tensor.dtype()));
  void* data = tensor.raw_data();
  const size_t count = static_cast<size_t>(tensor.numel());
  const nccl::DataType type = nccl_type(tensor.dtype());
  const nccl::RedOp red = nccl_op(op);
  return launch(description, {tensor}, false, [&](cudaStream_t s) {
    return count == 0 ? nccl::kSuccess : api_.all_reduce(data, data, count, type, red, comm_, s);
  });
}

std::shared_ptr<Work> NcclProcessGroup::broadcast(const Tensor& tensor, int root) {
  check_tensor("broadcast", "input", tensor);
  DDP4J_CHECK_ARG(root >= 0 && root < size(), "broadcast: source rank ", root, " is not in [0, ", size(), ")");
  const std::string description =
      detail::concat("broadcast from rank ", root, " of ", size_str(tensor.numel(), tensor.dtype()));
  void* data = tensor.raw_data();
  const size_t count = static_cast<size_t>(tensor.numel());
  const nccl::DataType type = nccl_type(tensor.dtype());
  return launch(description, {tensor}, false, [&](cudaStream_t s) {
    return count == 0 ? nccl::kSuccess : api_.broadcast(data, data, count, type, root, comm_, s);
  });
}

std::shared_ptr<Work> NcclProcessGroup::allgather(const Tensor& output, const Tensor& input) {
  check_tensor("allGather", "input", input);
  check_tensor("allGather", "output", output);
  DDP4J_CHECK_ARG(output.dtype() == input.dtype(), "allGather: output ", output.describe(), " and input ",
                  input.describe(), " have different dtypes");
  DDP4J_CHECK_ARG(output.numel() == input.numel() * size(), "allGather: output ", output.describe(), " must have ",
                  size(), " x ", input.numel(), " = ", input.numel() * size(), " elements (world size x input)");
  const std::string description =
      detail::concat("allGather of ", size_str(input.numel(), input.dtype()), " per rank");
  const void* in = input.raw_data();
  void* out = output.raw_data();
  const size_t count = static_cast<size_t>(input.numel());
  const nccl::DataType type = nccl_type(input.dtype());
  return launch(description, {input, output}, false, [&](cudaStream_t s) {
    return count == 0 ? nccl::kSuccess : api_.all_gather(in, out, count, type, comm_, s);
  });
}

std::shared_ptr<Work> NcclProcessGroup::allgather(const std::vector<Tensor>& outputs, const Tensor& input) {
  check_tensor("allGather", "input", input);
  check_allgather_outputs(outputs, input, [&](const Tensor& t) { check_tensor("allGather", "output", t); });
  const std::string description =
      detail::concat("allGather of ", size_str(input.numel(), input.dtype()), " per rank");
  // NCCL gathers into one buffer; a flat temporary (from the caching allocator, allocated before
  // the start event so the communication stream sees it ready) also keeps this right when an
  // output aliases the input.
  Tensor flat = Tensor::empty({input.numel() * size()}, input.dtype(), input.device());
  std::vector<Tensor> keep(outputs);
  keep.push_back(input);
  keep.push_back(flat);
  const void* in = input.raw_data();
  void* out = flat.raw_data();
  const size_t count = static_cast<size_t>(input.numel());
  const size_t block = input.nbytes();
  const nccl::DataType type = nccl_type(input.dtype());
  std::vector<void*> targets;
  for (const Tensor& t : outputs) targets.push_back(t.raw_data());
  return launch(
      description, std::move(keep), false,
      [&](cudaStream_t s) { return count == 0 ? nccl::kSuccess : api_.all_gather(in, out, count, type, comm_, s); },
      [&](cudaStream_t s) {
        if (block == 0) return;
        for (size_t r = 0; r < targets.size(); r++) {
          DDP4J_CUDA_CHECK(cudaMemcpyAsync(targets[r], static_cast<const char*>(out) + r * block, block,
                                           cudaMemcpyDeviceToDevice, s));
        }
      });
}

std::shared_ptr<Work> NcclProcessGroup::barrier() {
  float* buffer = barrier_buffer_;
  return launch("barrier", {}, /*blocking_sync=*/true, [&](cudaStream_t s) {
    return api_.all_reduce(buffer, buffer, 1, nccl::kFloat32, nccl::kSum, comm_, s);
  });
}

std::shared_ptr<Work> NcclProcessGroup::reduce(const Tensor& tensor, int root, ReduceOp op) {
  check_tensor("reduce", "input", tensor);
  check_peer("reduce", "destination", root, /*may_be_self=*/true);
  check_reduce_op("reduce", op, tensor);
  const std::string description = detail::concat("reduce(", reduce_op_name(op), ") to rank ", root, " of ",
                                                 size_str(tensor.numel(), tensor.dtype()));
  void* data = tensor.raw_data();
  const size_t count = static_cast<size_t>(tensor.numel());
  const nccl::DataType type = nccl_type(tensor.dtype());
  const nccl::RedOp red = nccl_op(op);
  // In place on every rank, as PyTorch: NCCL writes recvbuff on the root only.
  return launch(description, {tensor}, false, [&](cudaStream_t s) {
    return count == 0 ? nccl::kSuccess : api_.reduce(data, data, count, type, red, root, comm_, s);
  });
}

std::shared_ptr<Work> NcclProcessGroup::reduce_scatter(const Tensor& output, const Tensor& input, ReduceOp op) {
  check_tensor("reduceScatter", "input", input);
  check_tensor("reduceScatter", "output", output);
  DDP4J_CHECK_ARG(output.dtype() == input.dtype(), "reduceScatter: output ", output.describe(), " and input ",
                  input.describe(), " have different dtypes");
  DDP4J_CHECK_ARG(input.numel() == output.numel() * size(), "reduceScatter: input ", input.describe(), " must have ",
                  size(), " x ", output.numel(), " = ", output.numel() * size(),
                  " elements (world size x output)");
  check_reduce_op("reduceScatter", op, input);
  const size_t block = output.nbytes();
  const bool in_place = output.raw_data() == static_cast<char*>(input.raw_data()) + rank() * block;
  DDP4J_CHECK_ARG(in_place || !overlaps(output, input), "reduceScatter: the output ", output.describe(),
                  " overlaps the input ", input.describe(), " but is not its block ", rank(),
                  " (this rank's); use a separate output tensor");
  const std::string description = detail::concat("reduceScatter(", reduce_op_name(op), ") of ",
                                                 size_str(output.numel(), output.dtype()), " per rank");
  const void* in = input.raw_data();
  void* out = output.raw_data();
  const size_t count = static_cast<size_t>(output.numel());
  const nccl::DataType type = nccl_type(output.dtype());
  const nccl::RedOp red = nccl_op(op);
  return launch(description, {input, output}, false, [&](cudaStream_t s) {
    return count == 0 ? nccl::kSuccess : api_.reduce_scatter(in, out, count, type, red, comm_, s);
  });
}

std::shared_ptr<Work> NcclProcessGroup::reduce_scatter(const Tensor& output, const std::vector<Tensor>& inputs,
                                                       ReduceOp op) {
  check_tensor("reduceScatter", "output", output);
  check_reduce_scatter_inputs(output, inputs, [&](const Tensor& t) { check_tensor("reduceScatter", "input", t); });
  check_reduce_op("reduceScatter", op, output);
  const std::string description = detail::concat("reduceScatter(", reduce_op_name(op), ") of ",
                                                 size_str(output.numel(), output.dtype()), " per rank");
  // NCCL reads one buffer; the flat temporary (allocated before the start event, as allgather's)
  // also makes an output that aliases an input safe: the copies finish before NCCL writes.
  Tensor flat = Tensor::empty({output.numel() * size()}, output.dtype(), output.device());
  std::vector<Tensor> keep(inputs);
  keep.push_back(output);
  keep.push_back(flat);
  char* staging = static_cast<char*>(flat.raw_data());
  void* out = output.raw_data();
  const size_t count = static_cast<size_t>(output.numel());
  const size_t block = output.nbytes();
  const nccl::DataType type = nccl_type(output.dtype());
  const nccl::RedOp red = nccl_op(op);
  std::vector<const void*> sources;
  for (const Tensor& t : inputs) sources.push_back(t.raw_data());
  return launch(
      description, std::move(keep), false,
      [&](cudaStream_t s) {
        return count == 0 ? nccl::kSuccess : api_.reduce_scatter(staging, out, count, type, red, comm_, s);
      },
      nullptr,
      [&](cudaStream_t s) {
        if (block == 0) return;
        for (size_t r = 0; r < sources.size(); r++) {
          DDP4J_CUDA_CHECK(cudaMemcpyAsync(staging + r * block, sources[r], block,
                                           cudaMemcpyDeviceToDevice, s));
        }
      });
}

// Point-to-point ops share the communication stream with the collectives, in issue order. A
// stream per peer would not buy concurrency: NCCL serialises all kernels of one communicator
// anyway, and PyTorch's way out (a 2-rank communicator per pair, grouped isend/irecv) is a
// batch API this group does not offer. One stream keeps send/recv ordered with the collectives
// around them; the price is the documented deadlock of two ranks that both send first.
std::shared_ptr<Work> NcclProcessGroup::point_to_point(bool sending, const Tensor& tensor, int peer, int tag) {
  const char* op_name = sending ? "send" : "recv";
  check_tensor(op_name, sending ? "input" : "output", tensor);
  DDP4J_CHECK_ARG(tag >= 0, op_name, ": tag ", tag, " is negative; tags are >= 0 (the nccl backend ignores them)");
  check_peer(op_name, sending ? "destination" : "source", peer, /*may_be_self=*/false);
  const std::string description = detail::concat(op_name, sending ? " to rank " : " from rank ", peer, " of ",
                                                 size_str(tensor.numel(), tensor.dtype()));
  void* data = tensor.raw_data();
  const size_t count = static_cast<size_t>(tensor.numel());
  const nccl::DataType type = nccl_type(tensor.dtype());
  return launch(
      description, {tensor}, false,
      [&](cudaStream_t s) {
        if (count == 0) return nccl::kSuccess;
        return sending ? api_.send(data, count, type, peer, comm_, s) : api_.recv(data, count, type, peer, comm_, s);
      },
      nullptr, nullptr, kPointToPointTimeoutHint);
}

std::shared_ptr<Work> NcclProcessGroup::send(const Tensor& tensor, int dst, int tag) {
  return point_to_point(/*sending=*/true, tensor, dst, tag);
}

std::shared_ptr<Work> NcclProcessGroup::recv(const Tensor& tensor, int src, int tag) {
  return point_to_point(/*sending=*/false, tensor, src, tag);
}

// ---------------------------------------------------------------------------------------------
// Watchdog and abort

void NcclProcessGroup::abort(ErrorKind kind, const std::string& reason) { abort_impl(kind, reason, nullptr); }

void NcclProcessGroup::abort_impl(ErrorKind kind, const std::string& reason, const NcclWork* culprit) {
  {
    std::lock_guard<std::mutex> lock(abort_state_->mutex);
    if (abort_state_->aborted.load()) return;  // the first reason wins
    abort_state_->reason = reason;
    abort_state_->aborted.store(true);
  }
  abort_requested_.store(true);  // an enqueue polling under comm_mutex_ gives up now
  {
    std::lock_guard<std::mutex> lock(comm_mutex_);
    if (comm_ != nullptr) {
      // Stops NCCL's kernels and proxy threads, so the pending end events complete.
      api_.comm_abort(comm_);
      comm_ = nullptr;
    }
  }
  std::fprintf(stderr, "[ddp4j] NCCL process group (%s) aborted: %s\n", where().c_str(), reason.c_str());
  fail_pending(kind, reason, culprit);
}

void NcclProcessGroup::fail_pending(ErrorKind kind, const std::string& reason, const NcclWork* culprit) {
  std::deque<Pending> failed;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    failed.swap(pending_);
  }
  for (auto& p : failed) {
    if (p.work.get() == culprit) {
      p.work->finish(std::make_exception_ptr(Error(kind, reason)));
    } else {
      p.work->finish(std::make_exception_ptr(
          Error(ErrorKind::Distributed, detail::concat(p.work->description(),
                                                       " did not complete: the NCCL communicator was aborted (",
                                                       reason, ")"))));
    }
    if (!p.work->poll_gpu()) {
      std::lock_guard<std::mutex> lock(mutex_);
      draining_.push_back(p.work);
    }
  }
  cv_.notify_all();
}

void NcclProcessGroup::watchdog_loop() {
  // This thread's NCCL calls (ncclCommGetAsyncError, ncclCommAbort) run with the group's device current.
  cudaSetDevice(device_);
  while (true) {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      const Millis interval = pending_.empty() && draining_.empty() ? Millis(100) : options_.watchdog_interval;
      cv_.wait_for(lock, interval, [this] { return stopping_; });
      if (stopping_) return;
    }
    // 1. Completions, in issue order (later works on the same stream cannot finish first, but
    //    every one is checked, which is cheap).
    std::vector<std::shared_ptr<NcclWork>> done;
    std::shared_ptr<NcclWork> oldest;
    Clock::time_point oldest_enqueued;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      for (auto it = pending_.begin(); it != pending_.end();) {
        if (it->work->poll_gpu()) {
          done.push_back(it->work);
          it = pending_.erase(it);
        } else {
          if (!oldest) {
            oldest = it->work;
            oldest_enqueued = it->enqueued;
          }
          ++it;
        }
      }
      for (auto it = draining_.begin(); it != draining_.end();) {
        it = (*it)->poll_gpu() ? draining_.erase(it) : it + 1;
      }
    }
    for (auto& w : done) {
      if (abort_state_->aborted.load()) {
        w->finish(aborted_error(*abort_state_, w->description()));
      } else {
        w->finish(nullptr);
      }
    }
    if (!done.empty()) cv_.notify_all();  // the destructor waits for pending_ to drain
    if (abort_state_->aborted.load()) continue;

    // 2. Asynchronous NCCL errors (a peer died, a network failure). Skipped while an enqueue
    //    holds the communicator: the next round checks.
    nccl::Result async = nccl::kSuccess;
    bool checked = false;
    {
      std::unique_lock<std::mutex> lock(comm_mutex_, std::try_to_lock);
      if (lock.owns_lock() && comm_ != nullptr) {
        checked = api_.comm_get_async_error(comm_, &async) == nccl::kSuccess;
      }
    }
    if (checked && async != nccl::kSuccess && async != nccl::kInProgress) {
      std::string text;
      {
        std::lock_guard<std::mutex> lock(comm_mutex_);
        text = nccl_error(async);
      }
      abort(ErrorKind::Distributed,
            detail::concat("NCCL reported an asynchronous error on ", where(), ": ", text,
                           oldest ? detail::concat(" while running ", oldest->description()) : std::string(),
                           " (a peer may have died or the network failed)"));
      continue;
    }

    // 3. Timeouts: the oldest pending work is the first to exceed it.
    if (oldest && Clock::now() - oldest_enqueued > options_.timeout) {
      const std::string reason = detail::concat(
          oldest->description(), " timed out after ", duration_str(options_.timeout),
          ": not every rank took part in time (a rank may be stuck, slower than the timeout, or calling a "
          "different collective; raise the timeout of initProcessGroup or DDP4J_TIMEOUT_SECONDS if the work is "
          "just slow). The communicator was aborted",
          oldest->timeout_hint());
      // The timed-out work fails with Timeout, the others with Distributed.
      abort_impl(ErrorKind::Timeout, reason, oldest.get());
    }
  }
}

// ---------------------------------------------------------------------------------------------

std::string cuda_pci_bus_id(int device) {
  char id[32] = {0};
  DDP4J_CUDA_CHECK(cudaDeviceGetPCIBusId(id, sizeof(id), device));
  return id;
}

}  // namespace ddp4j
