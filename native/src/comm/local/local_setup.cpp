// LocalCollectives::create: the group-wide decision at construction (which ranks share a host,
// whether every rank agrees to use shared memory) and the hosts' leaders' own Gloo mesh.
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/device.h>

#include <cstdio>
#include <map>

#include "comm/gloo/peer_errors.h"
#include "comm/local/local_collectives.h"
#include "comm/local/shm/host_identity.h"
#include "comm/local/shm/shm_transport.h"

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

/**
 * The group-wide vote: never half shm (a host on Gloo could not join a hierarchical op). Whether
 * every rank's verdict is "ok"; rank 0 says why not.
 */
bool group_agrees(gloo::rendezvous::Store& store, int rank, int size, const std::string& verdict, Millis timeout) {
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
      return false;
    }
  }
  return true;
}

}  // namespace

std::unique_ptr<LocalCollectives> LocalCollectives::create(gloo::rendezvous::Store& store,
                                                         const std::shared_ptr<gloo::transport::Device>& device,
                                                         int rank, int size, Millis timeout, bool enabled,
                                                         const std::string& host_id) {
  // A rank with shm off publishes an identity no one else has, so nobody builds a transport with
  // it (that would wait for it until the timeout); its "fail" vote below then turns shm off for all.
  const std::string identity = !enabled ? "off:" + std::to_string(rank)
                               : host_id.empty() ? shm::host_identity()
                                                 : host_id;
  const std::vector<int> local = shm::same_host_ranks(store, "ddp4j/shm", rank, size, identity, timeout);

  std::unique_ptr<LocalCollectives> self(new LocalCollectives());
  self->world_ = size;
  self->rank_ = rank;
  self->timeout_ = timeout;
  if (!self->assign_hosts(store, identity)) return nullptr;  // every host has one rank (or shm is off everywhere): plain Gloo

  const std::string verdict = self->open_transport(store, local, enabled);
  if (!group_agrees(store, rank, size, verdict, timeout)) return nullptr;

  if (self->hosts_ > 1 && self->local_index_[static_cast<size_t>(rank)] == 0) self->connect_leaders(store, device);
  return self;
}

bool LocalCollectives::assign_hosts(gloo::rendezvous::Store& store, const std::string& identity) {
  // Every rank's host, from the identities same_host_ranks waited for: hosts numbered in the
  // order of their lowest rank, so that every rank numbers them alike.
  host_of_.assign(static_cast<size_t>(world_), 0);
  local_index_.assign(static_cast<size_t>(world_), 0);
  std::map<std::string, int> host_index;
  std::vector<int> host_sizes;
  for (int r = 0; r < world_; r++) {
    std::string id = r == rank_ ? identity : str(store.get("ddp4j/shm/host/" + std::to_string(r)));
    auto it = host_index.emplace(id, static_cast<int>(host_sizes.size())).first;
    if (it->second == static_cast<int>(host_sizes.size())) host_sizes.push_back(0);
    host_of_[static_cast<size_t>(r)] = it->second;
    local_index_[static_cast<size_t>(r)] = host_sizes[static_cast<size_t>(it->second)]++;
  }
  hosts_ = static_cast<int>(host_sizes.size());
  host_index_ = host_of_[static_cast<size_t>(rank_)];
  bool any_shared = false;
  for (int n : host_sizes) any_shared = any_shared || n >= 2;
  return any_shared;
}

std::string LocalCollectives::open_transport(gloo::rendezvous::Store& store, const std::vector<int>& local,
                                            bool enabled) {
  // This host's transport. Its local ranks succeed or fail together (the transport's own vote).
  std::string verdict = "ok";
  if (!enabled) {
    verdict = detail::concat("fail DDP4J_SHM=0 on rank ", rank_);
  } else if (local.size() >= 2) {
    shm::ShmOptions o;
    o.timeout = timeout_;
    try {
      const int local_rank = local_index_[static_cast<size_t>(rank_)];
      shm_ = std::make_unique<shm::ShmTransport>(store, "ddp4j/shm/" + std::to_string(local[0]), local_rank,
                                                 static_cast<int>(local.size()), local, o);
      inline_bytes_ = kInlineBytes;
    } catch (const std::exception& e) {
      verdict = detail::concat("fail rank ", rank_, ": ", strip_location(e.what()));
    }
  }
  return verdict;
}

void LocalCollectives::connect_leaders(gloo::rendezvous::Store& store,
                                      const std::shared_ptr<gloo::transport::Device>& device) {
  // The leaders' own mesh: rank = host index, size = number of hosts.
  auto context = std::make_shared<gloo::rendezvous::Context>(host_index_, hosts_);
  context->setTimeout(timeout_);
  gloo::rendezvous::PrefixStore leaders_store("ddp4j/gloo-leaders", store);
  try {
    auto dev = device;  // Gloo takes a non-const reference
    context->connectFullMesh(leaders_store, dev);
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    std::string m = strip_location(e.what());
    throw Error(is_gloo_timeout(m) ? ErrorKind::Timeout : ErrorKind::Distributed,
                detail::concat("rank ", rank_, ": connecting to the other hosts' leaders failed (", m, ")"));
  }
  leaders_ = context;
  // Gloo's errors name a peer leader by address; record them under the leaders' group ranks.
  std::vector<std::vector<std::string>> by_host;
  record_peer_addresses(leaders_store, *context, &by_host);
  leader_addresses_.assign(static_cast<size_t>(world_), {});
  for (int r = 0; r < world_; r++) {
    const int h = host_of_[static_cast<size_t>(r)];
    if (local_index_[static_cast<size_t>(r)] == 0 && h < static_cast<int>(by_host.size())) {
      leader_addresses_[static_cast<size_t>(r)] = by_host[static_cast<size_t>(h)];
    }
  }
}

}  // namespace ddp4j
