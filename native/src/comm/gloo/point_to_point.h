// point_to_point.h: send and recv of a ProcessGroupGloo, over the group's Gloo pairs with
// unbound buffers. Both ends first swap their Fingerprints (one 40-byte message each way, sent at
// the same time), so that a send and a recv that disagree on dtype or size fail cleanly on both
// ranks instead of Gloo aborting the process; then the data moves.
#pragma once
#include <chrono>
#include <condition_variable>
#include <deque>
#include <cstdint>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "comm/fingerprint.h"
#include "comm/flight_recorder.h"
#include "ddp4j/process_group.h"

namespace gloo {
class Context;
namespace transport {
class UnboundBuffer;
}
}  // namespace gloo

namespace ddp4j {

/**
 * The point-to-point transfers of one process group. Not collectives: only the two ranks take
 * part, they do not count in the group's collective numbering and they run beside its
 * collectives. Everything a transfer sends or receives is posted at the call; a worker thread of
 * its own (from a pool of idle ones, else a new one) then waits for it, so that, as in PyTorch,
 * two ranks may each isend to the other and then recv without deadlock.
 *
 * Matching: the k-th send from rank a to rank b with tag t meets the k-th recv on b from a with
 * tag t. Errors surface through the Work: Error(Distributed) when the two calls disagree
 * (transfer_mismatch_message; nothing moved, the group stays usable) or the connection fails;
 * Error(Timeout) when the peer does not take part within the group's timeout. A network error or
 * a timeout breaks the whole group (on_failure), as for a collective.
 */
class GlooPointToPoint {
 public:
  /** Tags are in [0, kTagLimit): the tag is part of Gloo's slot number. */
  static constexpr int kTagLimit = 1 << 16;
  /**
   * Transfers below this size post their data together with the headers, on a slot that encodes
   * what both ends must agree on (one message latency in all); larger ones post it once the
   * headers agreed (a second latency, negligible beside their size).
   */
  static constexpr size_t kEagerLimitBytes = size_t{1} << 24;

  /**
   * @param recorder   the group's flight recorder (outlives this); every transfer is recorded there
   * @param broken     the group's failure so far ("" if none); transfers fail at once when set
   * @param on_failure called with the error's message when a network error or a timeout breaks
   *                   the group (it closes the group's connections)
   * @param translate  turns a Gloo error of the transfer `description` into the group's error
   */
  GlooPointToPoint(std::shared_ptr<gloo::Context> context, int rank, std::chrono::milliseconds timeout,
                   FlightRecorder* recorder, std::function<std::string()> broken, std::function<void(const std::string&)> on_failure,
                   std::function<Error(const std::string& description, const std::string& gloo_message)> translate);
  /** close(), then joins the transfers' threads and frees their buffers. */
  ~GlooPointToPoint();
  GlooPointToPoint(const GlooPointToPoint&) = delete;
  GlooPointToPoint& operator=(const GlooPointToPoint&) = delete;

  /** Sends `tensor` (CPU, contiguous) to `dst`; the caller has checked the arguments. */
  std::shared_ptr<Work> send(const Tensor& tensor, int dst, int tag);
  /** Receives into `tensor` from `src`. */
  std::shared_ptr<Work> recv(const Tensor& tensor, int src, int tag);
  /**
   * Refuses new transfers and aborts the waits of those running: they fail, naming the closed
   * group. Their buffers (and tensors) stay alive until destruction, since Gloo may still hold
   * them: close the connections in between. Returns whether any transfer was unfinished.
   */
  bool close();

 private:
  struct Transfer;

  std::shared_ptr<Work> start(Fingerprint::Kind kind, const Tensor& tensor, int peer, int tag);
  /** Posts the headers and, for an eager transfer, the data (under mutex_, on the caller's thread). */
  void post(Transfer& transfer);
  void post_data(Transfer& transfer, uint64_t slot);
  /** The transfer's thread: waits for the headers, compares them, then for the data. */
  void run(Transfer& transfer);
  /** Waits for a posted send or recv, at most until `deadline`; Error(Distributed) when aborted. */
  void wait(gloo::transport::UnboundBuffer& buffer, bool sending, const Transfer& transfer,
            std::chrono::steady_clock::time_point deadline);
  /** Error(Distributed): the transfer stopped because this rank closed its group. */
  Error closed(const Transfer& transfer) const;
  void worker_loop(std::list<std::thread>::iterator self);
  void join_exited();  // joins workers that left after kIdleExit (under mutex_)

  /** How long an idle worker waits for another transfer before its thread ends. */
  static constexpr std::chrono::seconds kIdleExit{10};

  const std::shared_ptr<gloo::Context> context_;
  const int rank_;
  const std::chrono::milliseconds timeout_;
  FlightRecorder* const recorder_;
  const std::function<std::string()> broken_;
  const std::function<void(const std::string&)> on_failure_;
  const std::function<Error(const std::string&, const std::string&)> translate_;

  std::mutex mutex_;
  bool closing_ = false;
  std::map<std::pair<int, int>, uint64_t> sends_;  // (dst, tag) -> sends issued
  std::map<std::pair<int, int>, uint64_t> recvs_;  // (src, tag) -> recvs issued
  std::list<std::shared_ptr<Transfer>> active_;  // posted and not finished, for close()
  std::deque<std::shared_ptr<Transfer>> queue_;  // waiting for a worker
  std::list<std::thread> threads_;               // the workers
  std::vector<std::list<std::thread>::iterator> exited_;
  size_t idle_ = 0;  // workers waiting for a transfer
  std::condition_variable work_cv_;
  // Buffers (and their tensors) that Gloo may still point to: eager posts whose peer disagreed,
  // transfers of a closing group. Freed by the destructor, after the connections closed.
  std::vector<std::pair<std::vector<std::shared_ptr<gloo::transport::UnboundBuffer>>, Tensor>> orphans_;
};

}  // namespace ddp4j
