// Shared memory inside a Gloo process group: the group-wide decision and the composed collectives.
// See host_collectives.h for the contract.
#include "comm/host/host_collectives.h"

#include <gloo/broadcast.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/device.h>

#include <cstdio>
#include <map>

#include "comm/gloo/ring.h"
#include "comm/gloo/peer_errors.h"
#include "comm/host/shm/host_identity.h"
#include "comm/host/shm/shm_transport.h"

namespace ddp4j {
namespace {

using Millis = std::chrono::milliseconds;

std::string str(const std::vector<char>& v) { return std::string(v.begin(), v.end()); }

/** Waits for every key; Error(Timeout) saying what was awaited (the stores throw different types). */
void wait_keys(gloo::rendezvous::Store& store, const std::vector<std::string>& keys, Millis timeout,
               const char* what) {
  try {
    store.wait(keys, timeout);
  } catch (const std::exception& e) {
    throw Error(ErrorKind::Timeout, detail::concat("shared memory: not every rank published its ", what, " within ",
                                                   duration_str(timeout), ": ", strip_location(e.what())));
  }
}

}  // namespace

HostCollectives::~HostCollectives() = default;

std::unique_ptr<HostCollectives> HostCollectives::create(gloo::rendezvous::Store& store,
                                                         const std::shared_ptr<gloo::transport::Device>& device,
                                                         int rank, int size, Millis timeout, bool enabled,
                                                         const std::string& host_id) {
  // A rank with shm off publishes an identity no one else has, so nobody builds a transport with
  // it (that would wait for it until the timeout); its "fail" vote below then turns shm off for all.
  const std::string identity = !enabled ? "off:" + std::to_string(rank)
                               : host_id.empty() ? shm::host_identity()
                                                 : host_id;
  const std::vector<int> local = shm::same_host_ranks(store, "ddp4j/shm", rank, size, identity, timeout);

  // Every rank's host, from the identities same_host_ranks waited for: hosts numbered in the
  // order of their lowest rank, so that every rank numbers them alike.
  std::unique_ptr<HostCollectives> self(new HostCollectives());
  self->world_ = size;
  self->rank_ = rank;
  self->timeout_ = timeout;
  self->host_of_.assign(static_cast<size_t>(size), 0);
  self->local_index_.assign(static_cast<size_t>(size), 0);
  std::map<std::string, int> host_index;
  std::vector<int> host_sizes;
  for (int r = 0; r < size; r++) {
    std::string id = r == rank ? identity : str(store.get("ddp4j/shm/host/" + std::to_string(r)));
    auto it = host_index.emplace(id, static_cast<int>(host_sizes.size())).first;
    if (it->second == static_cast<int>(host_sizes.size())) host_sizes.push_back(0);
    self->host_of_[static_cast<size_t>(r)] = it->second;
    self->local_index_[static_cast<size_t>(r)] = host_sizes[static_cast<size_t>(it->second)]++;
  }
  self->hosts_ = static_cast<int>(host_sizes.size());
  self->host_index_ = self->host_of_[static_cast<size_t>(rank)];
  bool any_shared = false;
  for (int n : host_sizes) any_shared = any_shared || n >= 2;
  if (!any_shared) return nullptr;  // every host has one rank (or shm is off everywhere): plain Gloo

  // This host's transport. Its local ranks succeed or fail together (the transport's own vote).
  std::string verdict = "ok";
  if (!enabled) {
    verdict = detail::concat("fail DDP4J_SHM=0 on rank ", rank);
  } else if (local.size() >= 2) {
    shm::ShmOptions o;
    o.timeout = timeout;
    try {
      const int local_rank = self->local_index_[static_cast<size_t>(rank)];
      self->shm_ = std::make_unique<shm::ShmTransport>(store, "ddp4j/shm/" + std::to_string(local[0]), local_rank,
                                                       static_cast<int>(local.size()), local, o);
      self->inline_bytes_ = o.small_allreduce_bytes;
    } catch (const std::exception& e) {
      verdict = detail::concat("fail rank ", rank, ": ", strip_location(e.what()));
    }
  }

  // The group-wide vote: never half shm (a host on Gloo could not join a hierarchical op).
  store.set("ddp4j/shm/vote/" + std::to_string(rank), std::vector<char>(verdict.begin(), verdict.end()));
  std::vector<std::string> keys;
  for (int r = 0; r < size; r++) keys.push_back("ddp4j/shm/vote/" + std::to_string(r));
  wait_keys(store, keys, timeout, "shared-memory verdict");
  for (int r = 0; r < size; r++) {
    std::string v = r == rank ? verdict : str(store.get(keys[static_cast<size_t>(r)]));
    if (v != "ok") {
      if (rank == 0) {
        std::fprintf(stderr, "ddp4j: shared memory not used by this group (%s); using Gloo\n",
                     v.size() > 5 ? v.c_str() + 5 : v.c_str());
      }
      return nullptr;
    }
  }

  if (self->hosts_ > 1 && self->local_index_[static_cast<size_t>(rank)] == 0) {
    // The leaders' own mesh: rank = host index, size = number of hosts.
    auto context = std::make_shared<gloo::rendezvous::Context>(self->host_index_, self->hosts_);
    context->setTimeout(timeout);
    gloo::rendezvous::PrefixStore leaders_store("ddp4j/gloo-leaders", store);
    try {
      auto dev = device;  // Gloo takes a non-const reference
      context->connectFullMesh(leaders_store, dev);
    } catch (const Error&) {
      throw;
    } catch (const std::exception& e) {
      std::string m = strip_location(e.what());
      throw Error(is_gloo_timeout(m) ? ErrorKind::Timeout : ErrorKind::Distributed,
                  detail::concat("rank ", rank, ": connecting to the other hosts' leaders failed (", m, ")"));
    }
    self->leaders_ = context;
  }
  return self;
}

bool HostCollectives::broken() const { return shm_ && shm_->broken(); }

void HostCollectives::allreduce(const Tensor& t, ReduceOp op, uint32_t tag, const Fingerprint* fp) {
  if (t.numel() == 0) return;
  const size_t n = static_cast<size_t>(t.numel());
  void* p = t.raw_data();
  if (hosts_ == 1) {
    shm_->allreduce(p, p, n, t.dtype(), op, fp);  // its AVG divides by the local size, here the world
    return;
  }
  const ReduceOp base = op == ReduceOp::AVG ? ReduceOp::SUM : op;
  if (shm_) shm_->reduce(p, p, n, t.dtype(), base, 0, fp);
  if (leaders_) gloo_detail::ring_allreduce(leaders_, t, n, base, tag, timeout_);
  if (shm_) shm_->broadcast(p, t.nbytes(), 0, fp);
  if (op == ReduceOp::AVG) {
    float* f = t.data<float>();
    const float inv = 1.0f / static_cast<float>(world_);
    for (size_t i = 0; i < n; i++) f[i] *= inv;
  }
}

void HostCollectives::reduce(const Tensor& t, int root, ReduceOp op, const Fingerprint* fp) {
  if (t.numel() == 0) return;
  void* p = t.raw_data();
  // The transport's reduce leaves non-roots' buffers alone (their output is null) and skips the
  // copy-out there: less than an all-reduce of a copy.
  shm_->reduce(p, rank_ == root ? p : nullptr, static_cast<size_t>(t.numel()), t.dtype(), op,
               local_index_[static_cast<size_t>(root)], fp);
}

void HostCollectives::broadcast(const Tensor& t, int root, uint32_t tag, const Fingerprint* fp) {
  if (t.numel() == 0) return;
  void* p = t.raw_data();
  const size_t bytes = t.nbytes();
  const int root_local = local_index_[static_cast<size_t>(root)];
  if (hosts_ == 1) {
    shm_->broadcast(p, bytes, root_local, fp);
    return;
  }
  // Root's host first (so its leader has the data), then the leaders, then the other hosts.
  const int root_host = host_of_[static_cast<size_t>(root)];
  if (host_index_ == root_host && shm_) shm_->broadcast(p, bytes, root_local, fp);
  if (leaders_) {
    gloo::BroadcastOptions opts(leaders_);
    opts.setTag(tag);
    opts.setTimeout(timeout_);
    opts.setRoot(root_host);
    opts.setOutput<uint8_t>(static_cast<uint8_t*>(p), bytes);
    gloo::broadcast(opts);
  }
  if (host_index_ != root_host && shm_) shm_->broadcast(p, bytes, 0, fp);
}

void HostCollectives::allgather(const void* in, void* out, size_t bytes, const Fingerprint* fp) {
  if (bytes == 0) return;
  shm_->allgather(in, out, bytes, fp);
}

void HostCollectives::barrier(const Fingerprint* fp) { shm_->barrier(fp); }

void HostCollectives::abort(const std::string& reason) {
  if (shm_) shm_->abort(reason);
}

void HostCollectives::close_connections() {
  if (!leaders_) return;
  try {
    leaders_->closeConnections();
  } catch (const std::exception&) {
  }
}

}  // namespace ddp4j
