// ProcessGroupNccl::launch: how one op is queued on the communication stream, between a start
// event (after the compute stream's pending work) and an end event, and what a failure does.
#include "cuda/cuda_context.h"
#include "cuda/nccl/nccl_process_group.h"

namespace ddp4j {

using Clock = std::chrono::steady_clock;

std::shared_ptr<Work> ProcessGroupNccl::launch(Fingerprint fp, std::string description, std::vector<Tensor> tensors,
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
  create_events(&start, &end);
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
  // Queueing failed: abort once comm_mutex_ is released (abort takes it).
  ErrorKind failure_kind = ErrorKind::Distributed;
  const std::string failure = queue_on_comm_stream(fp, description, work, end, issue, after, before, &failure_kind);
  if (!failure.empty()) {
    work->finish(std::make_exception_ptr(Error(failure_kind, failure)));
    abort(ErrorKind::Distributed, failure);
    throw Error(failure_kind, failure);
  }
  cv_.notify_all();
  return work;
}

void ProcessGroupNccl::create_events(cudaEvent_t* start, cudaEvent_t* end) {
  DDP4J_CUDA_CHECK(cudaEventCreateWithFlags(start, cudaEventDisableTiming));
  cudaError_t e = cudaEventCreateWithFlags(end, cudaEventDisableTiming);
  if (e != cudaSuccess) {
    cudaEventDestroy(*start);
    cuda::throw_cuda_error(e, "cudaEventCreateWithFlags");
  }
}

std::string ProcessGroupNccl::queue_on_comm_stream(Fingerprint fp, const std::string& description,
                                                   const std::shared_ptr<NcclWork>& work, cudaEvent_t end,
                                                   const std::function<nccl::Result(cudaStream_t)>& issue,
                                                   const std::function<void(cudaStream_t)>& after,
                                                   const std::function<void(cudaStream_t)>& before,
                                                   ErrorKind* failure_kind) {
  std::lock_guard<std::mutex> lock(comm_mutex_);
  throw_if_aborted(description);
  // Numbered in issue order under comm_mutex_, as the Gloo group numbers its collectives.
  const bool transfer = fp.kind == Fingerprint::kSend || fp.kind == Fingerprint::kRecv;
  fp.seq = transfer ? ++p2p_seq_[{fp.kind, fp.peer}] : ++collective_seq_;
  const uint64_t record = recorder_.record(fp, FlightTransport::kNccl, /*started=*/true);
  std::string failure = queue_calls(description, issue, after, before, failure_kind);
  // The end event also closes a failed collective: part of it may be queued already, so its
  // tensors stay alive (draining) until the GPU is past it.
  cudaError_t recorded = cudaEventRecord(end, comm_stream_);
  if (recorded != cudaSuccess && failure.empty()) {
    cudaGetLastError();
    failure = detail::concat(description, " failed: cudaEventRecord: ", cudaGetErrorString(recorded));
  }
  std::lock_guard<std::mutex> plock(mutex_);
  if (failure.empty()) {
    pending_.push_back(Pending{work, Clock::now(), record});
  } else {
    recorder_.finished(record, /*failed=*/true);
    if (recorded == cudaSuccess) draining_.push_back(work);
  }
  return failure;
}

std::string ProcessGroupNccl::queue_calls(const std::string& description,
                                          const std::function<nccl::Result(cudaStream_t)>& issue,
                                          const std::function<void(cudaStream_t)>& after,
                                          const std::function<void(cudaStream_t)>& before, ErrorKind* failure_kind) {
  std::string failure;
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
    *failure_kind = ErrorKind::InvalidArgument;
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
  return failure;
}

}  // namespace ddp4j
