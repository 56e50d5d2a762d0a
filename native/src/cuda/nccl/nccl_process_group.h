// nccl_process_group.h: the GPU backend. One NCCL communicator per group, created non-blocking
// so that no NCCL call can hang the host; collectives run on the device's communication stream,
// ordered after the compute stream by events; a watchdog thread per group completes works,
// detects asynchronous NCCL errors and timeouts, and then aborts the communicator.
#pragma once
#include <cuda_runtime.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "cuda/nccl/nccl_loader.h"
#include "comm/fingerprint.h"
#include "comm/flight_recorder.h"
#include "cuda/nccl/nccl_work.h"
#include "ddp4j/process_group.h"

namespace ddp4j {

/** How long an ProcessGroupNccl waits. */
struct NcclOptions {
  /**
   * Communicator creation (every rank must join within it) and each collective (from its call
   * until it has finished on the GPU). Past it the communicator is aborted.
   */
  std::chrono::milliseconds timeout = std::chrono::minutes(30);
  /** How often the watchdog looks at pending collectives (end events, ncclCommGetAsyncError). */
  std::chrono::milliseconds watchdog_interval = std::chrono::milliseconds(1);
};

/**
 * A ProcessGroup over NCCL for CUDA tensors (float32, int64, bfloat16, float16; every collective
 * refuses bool, see nccl_type) on one device per rank.
 * Mirrors torch.distributed's ProcessGroupNCCL.
 *
 * Construction joins the communicator described by `unique_id` (rank 0 creates it with
 * create_unique_id(); the Java layer passes it through the store). It is created non-blocking
 * (ncclConfig_t blocking = 0) and polled with ncclCommGetAsyncError until ready; past the
 * timeout it is aborted and Error(Timeout) names the ranks' count and the device.
 *
 * Every collective validates its tensors (on this group's device, dtype, sizes: Error
 * InvalidArgument), records an event on the compute stream, makes the communication stream wait
 * for it, queues the NCCL call there, polls until NCCL has enqueued it, and records the end
 * event. Errors: on an asynchronous NCCL error or a collective older than the timeout, the
 * watchdog aborts the communicator (ncclCommAbort); every pending work then fails (Timeout for
 * the one that timed out, naming op, elements, dtype, bytes and the timeout; Distributed for the
 * others) and every later call throws Error(Distributed) saying why.
 */
class ProcessGroupNccl : public ProcessGroup {
 public:
  /** Creates an id with ncclGetUniqueId (rank 0, once per group). Needs NCCL, not a GPU. */
  static nccl::UniqueId create_unique_id();

  /**
   * Joins the communicator of `size` ranks named by `unique_id` as `rank`, on CUDA device
   * `device`. Blocks until every rank has joined or the timeout passes. Throws Error(IllegalState)
   * without NCCL or a GPU, Error(InvalidArgument) for a bad rank, size or device, Error(Timeout)
   * or Error(Distributed) when the communicator cannot be created.
   */
  ProcessGroupNccl(const nccl::UniqueId& unique_id, int rank, int size, int device, NcclOptions options = {});
  /**
   * Waits (at most the timeout) for pending collectives, then finalizes and destroys the
   * communicator; aborts it instead when that does not finish in time or the group failed.
   */
  ~ProcessGroupNccl() override;

  std::string backend() const override { return "nccl"; }
  /** Every op from its enqueue to its end event (or the abort that failed it). */
  const FlightRecorder* flight_recorder() const override { return &recorder_; }
  int device() const { return device_; }
  const NcclOptions& options() const { return options_; }
  /** The loaded NCCL's version code, e.g. 22805. */
  int nccl_version() const { return api_.version; }
  /** Whether the communicator was aborted (after which every call fails). */
  bool aborted() const { return abort_state_->aborted.load(); }

  /** In-place all-reduce; AVG is ncclAvg (floating dtypes only, like the Gloo backend). */
  std::shared_ptr<Work> allreduce(const Tensor& tensor, ReduceOp op) override;
  std::shared_ptr<Work> broadcast(const Tensor& tensor, int root) override;
  std::shared_ptr<Work> allgather(const Tensor& output, const Tensor& input) override;
  /** Gathers into a flat temporary on the device, then copies each block out on the communication stream. */
  std::shared_ptr<Work> allgather(const std::vector<Tensor>& outputs, const Tensor& input) override;
  /** A one-element all-reduce; synchronize() on its Work blocks the host, as PyTorch's barrier does. */
  std::shared_ptr<Work> barrier() override;

  /**
   * ncclReduce in place (sendbuff = recvbuff = tensor's data) on every rank: NCCL writes the
   * result only on `root` and leaves recvbuff alone elsewhere (nccl.h: recvbuff "may be NULL on
   * all calls except for root"), so the other ranks' tensors keep their values, as PyTorch's.
   * AVG is ncclAvg (floating dtypes only). Mirrors ProcessGroupNCCL::reduce. Throws
   * Error(InvalidArgument) for a tensor off this group's device, an unsupported dtype, a root
   * outside [0, size()) or AVG on int64.
   */
  std::shared_ptr<Work> reduce(const Tensor& tensor, int root, ReduceOp op) override;

  /**
   * ncclReduceScatter(input, output, recvcount = output.numel()). `output` may be block rank()
   * of `input` itself (NCCL's in-place form); any other overlap of the two is rejected, since
   * NCCL would read elements it had already overwritten. Throws Error(InvalidArgument) for
   * wrong devices or dtypes, input.numel() != size() * output.numel(), a partial overlap or
   * AVG on int64. Mirrors reduce_scatter_tensor.
   */
  std::shared_ptr<Work> reduce_scatter(const Tensor& output, const Tensor& input, ReduceOp op) override;

  /**
   * Copies the inputs into a flat temporary on the device (on the communication stream, after
   * the compute stream's pending work), then reduce-scatters it into `output` as above; an
   * output that aliases one of the inputs is therefore fine. Mirrors reduce_scatter(output,
   * input_list).
   */
  std::shared_ptr<Work> reduce_scatter(const Tensor& output, const std::vector<Tensor>& inputs,
                                       ReduceOp op) override;

  /**
   * ncclSend of `tensor` to group rank `dst`, queued on the communication stream in issue order
   * with the collectives. NCCL has no tags: any tag >= 0 is accepted and ignored (as in
   * PyTorch's NCCL backend), so sends to one peer are matched with that peer's recvs purely by
   * order. The peer's recv must have the same element count and dtype: NCCL does not check, and
   * a mismatch (or a missing recv) leaves the send running until the group's timeout, when the
   * watchdog aborts the communicator and every pending work fails (this one with Error(Timeout)).
   * Because every op of this group runs on one stream, two ranks that both send to each other
   * first and receive second can deadlock (a large send waits for a recv queued behind it):
   * order them send-then-recv on one rank and recv-then-send on the other. Throws
   * Error(InvalidArgument) for a bad tensor, a dst outside [0, size()) or this rank, or tag < 0.
   * Mirrors isend on ProcessGroupNCCL.
   */
  std::shared_ptr<Work> send(const Tensor& tensor, int dst, int tag) override;

  /** ncclRecv into `tensor` from group rank `src`; the counterpart of send (same rules and errors). Mirrors irecv. */
  std::shared_ptr<Work> recv(const Tensor& tensor, int src, int tag) override;

  /**
   * Aborts the communicator now (ncclCommAbort): pending works fail with Error(Distributed)
   * naming `reason`, later calls throw it. Idempotent; the first reason wins. The watchdog calls
   * this (through abort_impl) on an asynchronous NCCL error or a timeout.
   */
  void abort(ErrorKind kind, const std::string& reason);

 private:
  struct Pending {
    std::shared_ptr<NcclWork> work;
    std::chrono::steady_clock::time_point enqueued;
    uint64_t record = 0;  // its flight record
  };

  /**
   * Queues one op on the communication stream: `before` (copies into a temporary), `issue` (the
   * NCCL call), `after` (copies out of one), all between the start and end events. A failure of
   * `before` or `after` aborts the group, like a failed NCCL call. `timeout_hint` is appended to
   * the watchdog's timeout message when this op is the one that timed out.
   */
  std::shared_ptr<Work> launch(Fingerprint fp, std::string description, std::vector<Tensor> tensors, bool blocking_sync,
                               const std::function<nccl::Result(cudaStream_t)>& issue,
                               const std::function<void(cudaStream_t)>& after = nullptr,
                               const std::function<void(cudaStream_t)>& before = nullptr,
                               std::string timeout_hint = std::string());
  // Steps of launch (nccl_launch.cpp).
  /** Creates the start and end events of an op (timing off); on failure none is left behind. */
  void create_events(cudaEvent_t* start, cudaEvent_t* end);
  /**
   * Takes comm_mutex_: runs `before`, `issue`, `after` on the communication stream, records the
   * end event and files the work as pending (or draining). Returns the failure ("" if none) and
   * its kind in `failure_kind`.
   */
  std::string queue_on_comm_stream(Fingerprint fp, const std::string& description, const std::shared_ptr<NcclWork>& work,
                                   cudaEvent_t end,
                                   const std::function<nccl::Result(cudaStream_t)>& issue,
                                   const std::function<void(cudaStream_t)>& after,
                                   const std::function<void(cudaStream_t)>& before, ErrorKind* failure_kind);
  /** The calls of queue_on_comm_stream: `before`, the NCCL call and its polling, `after`. */
  std::string queue_calls(const std::string& description, const std::function<nccl::Result(cudaStream_t)>& issue,
                          const std::function<void(cudaStream_t)>& after,
                          const std::function<void(cudaStream_t)>& before, ErrorKind* failure_kind);

  // Steps of construction and destruction (nccl_process_group.cpp).
  /** ncclCommInitRankConfig (non-blocking) and its polling until the communicator is ready. */
  void init_communicator(const nccl::UniqueId& unique_id, int rank, int size);
  /** The communication stream and barrier()'s device buffer; aborts the communicator on failure. */
  void create_stream_and_barrier_buffer();
  /** Waits for pending collectives (or an abort), then stops the watchdog. */
  void stop_watchdog();
  /** Finalizes and destroys the communicator (bounded), or aborts it. */
  void close_communicator();
  /** Fails the works left over and releases their tensors once the GPU is past them (or leaks them). */
  void release_leftover_works();

  // Steps of the watchdog's round (nccl_watchdog.cpp).
  /** Completes the works whose end event completed; returns the oldest still pending and its enqueue time. */
  std::shared_ptr<NcclWork> complete_finished_works(std::chrono::steady_clock::time_point* oldest_enqueued);
  /** Aborts on an asynchronous NCCL error (`oldest` is named in the reason); whether it did. */
  bool abort_on_async_error(const NcclWork* oldest);
  /** Aborts when `oldest`, enqueued at `enqueued`, is older than the timeout. */
  void abort_on_timeout(const std::shared_ptr<NcclWork>& oldest, std::chrono::steady_clock::time_point enqueued);
  /** The checks of a reduction's op: a known ReduceOp; AVG only on float32 (as the Gloo backend). */
  void check_reduce_op(const char* op_name, ReduceOp op, const Tensor& t) const;
  /** The checks and the queueing that send and recv share. */
  std::shared_ptr<Work> point_to_point(bool sending, const Tensor& tensor, int peer, int tag);
  /** Polls ncclCommGetAsyncError while it reports ncclInProgress; `what` names the call for messages. */
  nccl::Result wait_ready(nccl::Result first, const std::string& what, std::chrono::milliseconds limit);
  void check_tensor(const char* op, const char* what, const Tensor& t) const;
  void throw_if_aborted(const std::string& description) const;
  std::string nccl_error(nccl::Result r) const;
  std::string where() const;  // "rank 0 of 2 on cuda:0"
  void watchdog_loop();
  /** abort(); `culprit` (may be null) fails with kind and reason itself, the others with Distributed. */
  void abort_impl(ErrorKind kind, const std::string& reason, const NcclWork* culprit);
  void fail_pending(ErrorKind kind, const std::string& reason, const NcclWork* culprit);

  FlightRecorder recorder_{FlightRecorder::capacity_from_environment()};  // every op, enqueue to end event
  uint64_t collective_seq_ = 0;                               // under comm_mutex_
  std::map<std::pair<uint32_t, uint32_t>, uint64_t> p2p_seq_;  // (kind, peer) -> transfers, under comm_mutex_
  const nccl::Api api_;
  const int device_;
  const NcclOptions options_;
  nccl::Comm comm_ = nullptr;
  cudaStream_t compute_ = nullptr;
  cudaStream_t comm_stream_ = nullptr;
  float* barrier_buffer_ = nullptr;  // one float on the device, all-reduced by barrier()
  std::shared_ptr<NcclAbortState> abort_state_ = std::make_shared<NcclAbortState>();

  // comm_mutex_ serialises every call on comm_ (enqueue + its polling, async-error queries, abort).
  std::mutex comm_mutex_;
  std::atomic<bool> abort_requested_{false};  // makes an enqueue's polling give up at once

  std::mutex mutex_;  // guards pending_, draining_, stopping_
  std::condition_variable cv_;
  std::deque<Pending> pending_;                    // issue order
  std::vector<std::shared_ptr<NcclWork>> draining_;  // failed, but the GPU may still use their tensors
  bool stopping_ = false;
  std::thread watchdog_;
};

/** The device's PCI bus id ("0000:3b:00.0"): with the UUID (Cuda.deviceUuid), how ranks tell whether they share a GPU. */
std::string cuda_pci_bus_id(int device);

}  // namespace ddp4j
