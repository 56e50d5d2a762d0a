// The Gloo backend's group: construction (rendezvous, connections, shared memory, the worker),
// destruction, and its failure state. See process_group.h for the contract.
#include "comm/gloo/process_group.h"

#include <gloo/context.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/device.h>

#include <cstdlib>

#include "comm/gloo/peer_errors.h"
#include "comm/gloo/peer_loss.h"
#include "comm/gloo/point_to_point.h"
#include "comm/gloo/rendezvous.h"
#include "comm/gloo/small_allreduce.h"
#include "comm/local/local_collectives.h"

namespace ddp4j {

// ---------------------------------------------------------------------------------------------
// Construction: device, rendezvous, full mesh.

ProcessGroupGloo::ProcessGroupGloo(gloo::rendezvous::Store& store, int rank, int size, GlooOptions options,
                                   std::shared_ptr<gloo::rendezvous::Store> records)
    : ProcessGroup(rank, size), options_(std::move(options)), recorder_(FlightRecorder::capacity_from_environment()) {
  DDP4J_CHECK_ARG(size >= 1, "process group size must be at least 1, got ", size);
  DDP4J_CHECK_ARG(rank >= 0 && rank < size, "rank must be in [0, ", size, "), got ", rank);
  DDP4J_CHECK_ARG(options_.timeout.count() > 0, "process group timeout must be positive, got ",
                  options_.timeout.count(), " ms");
  const std::shared_ptr<gloo::transport::Device> device = gloo_detail::open_tcp_device(options_, rank);
  if (records && size > 1) {
    loss_ = std::make_unique<PeerLossRecords>(std::move(records), rank);
    loss_->publish_pid();  // before joining: a peer that sees this rank die reads it after the rendezvous
  }
  gloo_detail::wait_for_ranks(store, rank, size, options_.timeout);
  connect_mesh(store, device);
  connect_small_allreduce(store, device);
  local_ = LocalCollectives::create(store, device, rank, size, options_.timeout, options_.shm, options_.shm_host_id);
  if (local_) {
    flight_transport_ = local_->single_host() ? FlightTransport::kShm : FlightTransport::kShmGloo;
    // A leader's failed step among the leaders then names the peer leader, and reads its record.
    const auto& leaders = local_->leader_addresses();
    for (size_t r = 0; r < leaders.size() && r < peer_addresses_.size(); r++) {
      peer_addresses_[r].insert(peer_addresses_[r].end(), leaders[r].begin(), leaders[r].end());
    }
  }
  worker_ = std::thread([this] { worker_loop(); });
}

void ProcessGroupGloo::connect_mesh(gloo::rendezvous::Store& store,
                                    const std::shared_ptr<gloo::transport::Device>& device) {
  context_ = gloo_detail::connect_full_mesh(store, "ddp4j/gloo", device, rank(), size(), options_.timeout);
  {
    gloo::rendezvous::PrefixStore gloo_store("ddp4j/gloo", store);
    record_peer_addresses(gloo_store, *context_, &peer_addresses_);
  }
  p2p_ = std::make_unique<GlooPointToPoint>(
      context_, rank(), options_.timeout, &recorder_, [this] { return broken(); },
      [this](const std::string& reason) {
        set_broken(reason);
        try {
          context_->closeConnections();  // peers blocked on this rank fail now, not at their timeout
          if (small_) small_->context->closeConnections();
        } catch (const std::exception&) {
        }
      },
      [this](const std::string& description, const std::string& gloo_message) {
        return gloo_failure(description, gloo_message, 0);
      });
}

void ProcessGroupGloo::connect_small_allreduce(gloo::rendezvous::Store& store,
                                               const std::shared_ptr<gloo::transport::Device>& device) {
  const int n = size();
  if (!(n > 1 && n <= 8 && options_.small_allreduce_bytes > 0)) return;
  // Its own connections: Gloo sizes a socket's send buffer on the first bound-buffer send and
  // so turns off the kernel's autotuning, which would slow the large all-reduces down ~100x.
  auto small_context = gloo_detail::connect_full_mesh(store, "ddp4j/gloo-small", device, rank(), n, options_.timeout);
  try {
    gloo::rendezvous::PrefixStore small_store("ddp4j/gloo-small", store);
    record_peer_addresses(small_store, *small_context, &peer_addresses_);  // so that its errors name the peer too
    small_ = std::make_shared<SmallAllreduce>(small_context, options_.small_allreduce_bytes,
                                              options_.small_allreduce_sync_reads);
  } catch (const std::exception& e) {
    std::string m = strip_location(e.what());
    throw Error(is_gloo_timeout(m) ? ErrorKind::Timeout : ErrorKind::Distributed,
                detail::concat("rank ", rank(), " of ", n, ": setting up the connections failed (", m, ")"));
  }
}

// ---------------------------------------------------------------------------------------------
// Destruction and the failure state.

ProcessGroupGloo::~ProcessGroupGloo() {
  std::deque<Op> abandoned;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
    abandoned.swap(queue_);
  }
  cv_.notify_all();
  for (auto& op : abandoned) {
    recorder_.finished(op.record, /*failed=*/true);
    op.work->finish(std::make_exception_ptr(
        Error(ErrorKind::Distributed, detail::concat(op.work->description(), " did not run: rank ", rank(),
                                                     " closed its process group first"))));
  }
  if (worker_.joinable()) worker_.join();
  // Transfers still running fail; Gloo holds their buffers until the connections close, so those
  // close before the buffers go.
  if (p2p_ && p2p_->close()) {
    try {
      context_->closeConnections();
    } catch (const std::exception&) {
    }
  }
  p2p_.reset();  // joins the transfers' threads, frees their buffers
  // Peers still waiting in the segment for this rank fail now, naming it, instead of at their timeout.
  if (local_) local_->abort(detail::concat("rank ", rank(), " closed its process group"), ErrorKind::PeerLost);
  local_.reset();     // unmaps the segment, closes the leaders' connections
  small_.reset();    // unregisters its buffers from the pairs
  context_.reset();  // closes the pairs and stops Gloo's network thread
}

Error ProcessGroupGloo::gloo_failure(const std::string& description, const std::string& gloo_message, uint64_t seq) {
  const int peer = loss_ ? closed_peer(gloo_message, peer_addresses_) : -1;
  bool exited = false;
  if (peer >= 0) {
    const DeadRank dead = loss_->explain_closed(peer);
    if (dead.rank >= 0) {
      loss_->record(dead);  // before this rank's connections close: its peers then read why
      set_lost(dead.rank, std::atol(dead.pid.c_str()));
      Error e = loss_->died_error(dead, peer, description, gloo_message);
      e.facts().seq = seq;
      return e;
    }
    exited = dead.exited;
  }
  Error e = translate_gloo_error(description, gloo_message, options_.timeout, rank(), peer_addresses_);
  e.facts().seq = seq;
  if (exited && e.kind() == ErrorKind::PeerLost) e.facts().loss = PeerLoss::Exited;
  return e;
}

std::string ProcessGroupGloo::transport() const { return local_ ? local_->transport() : "gloo"; }

std::string ProcessGroupGloo::broken() const {
  std::lock_guard<std::mutex> lock(broken_mutex_);
  return broken_;
}

void ProcessGroupGloo::set_broken(const std::string& reason) {
  std::lock_guard<std::mutex> lock(broken_mutex_);
  if (broken_.empty()) broken_ = reason;
}

void ProcessGroupGloo::set_lost(int dead_rank, long dead_pid) {
  std::lock_guard<std::mutex> lock(broken_mutex_);
  if (lost_rank_ < 0) {
    lost_rank_ = dead_rank;
    lost_pid_ = dead_pid;
  }
}

void ProcessGroupGloo::abort_local(const std::string& reason) {
  local_aborted_ = true;
  int dead_rank;
  long dead_pid;
  {
    std::lock_guard<std::mutex> lock(broken_mutex_);
    dead_rank = lost_rank_;
    dead_pid = lost_pid_;
  }
  if (dead_rank >= 0) {
    local_->abort_for_death(reason, dead_rank, dead_pid);
  } else {
    local_->abort(reason);
  }
}

void ProcessGroupGloo::close_connections() {
  try {
    context_->closeConnections();
    if (small_) small_->context->closeConnections();
  } catch (const std::exception&) {
  }
  if (local_) {
    local_->close_connections();
    // A leader whose Gloo step failed must release its host's other ranks too, not only its sockets.
    abort_local(detail::concat("rank ", rank(), "'s process group failed: ", broken()));
  }
}

}  // namespace ddp4j
