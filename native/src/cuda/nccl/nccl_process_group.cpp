// The NCCL backend's group (nccl_process_group.h): the non-blocking communicator's creation and
// teardown, and the helpers its collectives, launch and watchdog share.
#include "cuda/nccl/nccl_process_group.h"

#include <algorithm>
#include <cstring>

#include "cuda/cuda_context.h"
#include "cuda/nccl/nccl_backoff.h"

namespace ddp4j {
namespace {

using Clock = std::chrono::steady_clock;
using Millis = std::chrono::milliseconds;
using nccl_detail::aborted_error;
using nccl_detail::Backoff;

NcclOptions with_bounded_timeout(NcclOptions options) {
  options.timeout = std::min(options.timeout, kMaxNcclTimeout);
  return options;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Construction and destruction

nccl::UniqueId ProcessGroupNccl::create_unique_id() {
  const nccl::Api& api = nccl::api();
  nccl::UniqueId id;
  std::memset(&id, 0, sizeof(id));
  nccl::Result r = api.get_unique_id(&id);
  DDP4J_CHECK(r == nccl::kSuccess, Distributed, "ncclGetUniqueId failed: ", api.error_string(r),
              " (NCCL needs a usable network interface for its bootstrap; NCCL_SOCKET_IFNAME picks one, "
              "NCCL_DEBUG=INFO shows why)");
  return id;
}

ProcessGroupNccl::ProcessGroupNccl(const nccl::UniqueId& unique_id, int rank, int size, int device,
                                   NcclOptions options)
    : ProcessGroup(rank, size), api_(nccl::api()), device_(device), options_(with_bounded_timeout(options)) {
  DDP4J_CHECK_ARG(size >= 1, "process group size must be at least 1, got ", size);
  DDP4J_CHECK_ARG(rank >= 0 && rank < size, "rank must be in [0, ", size, "), got ", rank);
  DDP4J_CHECK_ARG(options_.timeout.count() > 0, "process group timeout must be positive, got ",
                  options_.timeout.count(), " ms");
  cuda::check_device_index(device);  // "no CUDA device" / a device that does not exist
  cuda::DeviceGuard guard(device);
  compute_ = cuda::compute_stream(device);

  init_communicator(unique_id, rank, size);
  create_stream_and_barrier_buffer();
  watchdog_ = std::thread([this] { watchdog_loop(); });
}

void ProcessGroupNccl::init_communicator(const nccl::UniqueId& unique_id, int rank, int size) {
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
}

void ProcessGroupNccl::create_stream_and_barrier_buffer() {
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
}

ProcessGroupNccl::~ProcessGroupNccl() {
  stop_watchdog();
  close_communicator();
  release_leftover_works();
  if (barrier_buffer_ != nullptr) cudaFree(barrier_buffer_);
  if (comm_stream_ != nullptr) cudaStreamDestroy(comm_stream_);  // released once its queued work is done
}

void ProcessGroupNccl::stop_watchdog() {
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
}

void ProcessGroupNccl::close_communicator() {
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
}

void ProcessGroupNccl::release_leftover_works() {
  // Tensors of failed works that the GPU may still write: release them once their end events
  // complete. Give that a moment; past it, keep them referenced forever (a leak beats memory
  // that NCCL writes after the caching allocator handed it to someone else).
  std::vector<std::shared_ptr<NcclWork>> draining;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    draining.swap(draining_);
    for (auto& p : pending_) {
      recorder_.finished(p.record, /*failed=*/true);
      draining.push_back(p.work);
    }
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
}

// ---------------------------------------------------------------------------------------------
// Helpers

std::string ProcessGroupNccl::where() const {
  return detail::concat("rank ", rank(), " of ", size(), " on cuda:", device_);
}

std::string ProcessGroupNccl::nccl_error(nccl::Result r) const {
  std::string text = api_.error_string(r);
  const char* last = comm_ != nullptr && api_.get_last_error != nullptr ? api_.get_last_error(comm_) : nullptr;
  if (last != nullptr && *last != '\0') text += detail::concat(": ", last);
  return text + " (NCCL_DEBUG=INFO shows NCCL's own log)";
}

nccl::Result ProcessGroupNccl::wait_ready(nccl::Result first, const std::string& what, Millis limit) {
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

void ProcessGroupNccl::check_tensor(const char* op, const char* what, const Tensor& t) const {
  DDP4J_CHECK_ARG(t.defined(), op, ": the ", what, " tensor is missing");
  DDP4J_CHECK_ARG(t.device().type == DeviceType::CUDA && t.device().index == device_, op,
                  ": the nccl process group works on tensors on its device cuda:", device_, ", but the ", what, " is ",
                  t.describe(), "; move it with tensor.to(cuda:", device_, ")");
  DDP4J_CHECK_ARG(static_cast<int>(t.dtype()) >= 0 && static_cast<int>(t.dtype()) < kNumDTypes, op, ": the ", what,
                  " has an unknown dtype ", static_cast<int>(t.dtype()));
}

void ProcessGroupNccl::check_reduce_op(const char* op_name, ReduceOp op, const Tensor& t) const {
  DDP4J_CHECK_ARG(static_cast<int>(op) >= 0 && static_cast<int>(op) < kNumReduceOps, op_name, ": unknown ReduceOp ",
                  static_cast<int>(op));
  DDP4J_CHECK_ARG(op != ReduceOp::AVG || t.dtype() != DType::Int64, op_name,
                  ": ReduceOp.AVG needs a floating tensor (float32, bfloat16 or float16), got ", t.describe(),
                  "; use SUM and divide by the world size");
}

void ProcessGroupNccl::throw_if_aborted(const std::string& description) const {
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

std::string cuda_pci_bus_id(int device) {
  char id[32] = {0};
  DDP4J_CUDA_CHECK(cudaDeviceGetPCIBusId(id, sizeof(id), device));
  return id;
}

}  // namespace ddp4j
