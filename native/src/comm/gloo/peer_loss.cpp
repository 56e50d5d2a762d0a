// Records of lost peers in the group's store, and the error naming the dead rank; see peer_loss.h.
#include "comm/gloo/peer_loss.h"

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <sstream>

#include "comm/local/shm/shm_transport.h"  // kPeerKilled: the words of a death, as the shared-memory transport's
#include "ddp4j/process_group.h"

namespace ddp4j {
namespace {

std::string pid_key(int rank) { return "ddp4j/pid/" + std::to_string(rank); }
std::string lost_key(int rank) { return "ddp4j/lost/" + std::to_string(rank); }
/** Java's ExitMarks.KEY: a rank that exits or closes its group sets it first. */
std::string exit_key(int rank) { return "ddp4j/exited/" + std::to_string(rank); }

std::string text(const std::vector<char>& v) { return std::string(v.begin(), v.end()); }

}  // namespace

PeerLossRecords::PeerLossRecords(std::shared_ptr<gloo::rendezvous::Store> store, int rank)
    : store_(std::move(store)), rank_(rank) {}

void PeerLossRecords::publish_pid() {
  const std::string pid = std::to_string(::getpid());
  try {
    store_->set(pid_key(rank_), std::vector<char>(pid.begin(), pid.end()));
  } catch (const std::exception&) {
    // the survivors of this rank's death will name it without its pid
  }
}

bool PeerLossRecords::has(const std::string& key) {
  try {
    // A key set before the connection closed is there now: no waiting beyond the round trip.
    store_->wait({key}, std::chrono::milliseconds(1));
    return true;
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::Timeout) return false;
    throw;
  }
}

DeadRank PeerLossRecords::explain_closed(int peer) {
  DeadRank dead;
  try {
    if (has(lost_key(peer))) {
      std::istringstream record(text(store_->get(lost_key(peer))));
      record >> dead.rank >> dead.pid;
      if (dead.pid == "?") dead.pid.clear();
      return dead;
    }
    if (has(exit_key(peer))) {  // it exited or closed its group: not a death
      dead.exited = true;
      return dead;
    }
    dead.rank = peer;
    if (has(pid_key(peer))) dead.pid = text(store_->get(pid_key(peer)));
  } catch (const std::exception&) {
    // no answer from the store: what the connection says is all there is
    if (dead.rank != peer) dead.rank = -1;
  }
  return dead;
}

void PeerLossRecords::record(const DeadRank& dead) {
  const std::string value = detail::concat(dead.rank, " ", dead.pid.empty() ? std::string("?") : dead.pid);
  try {
    store_->set(lost_key(rank_), std::vector<char>(value.begin(), value.end()));
  } catch (const std::exception&) {
    // the peers that see this rank close will name it instead of the dead rank
  }
}

Error PeerLossRecords::died_error(const DeadRank& dead, int via, const std::string& description,
                                  const std::string& gloo_message) const {
  const std::string who = dead.pid.empty() ? detail::concat("rank ", dead.rank)
                                           : detail::concat("rank ", dead.rank, " (pid ", dead.pid, ")");
  const std::string seen = via == dead.rank
                               ? detail::concat("seen from rank ", rank_)
                               : detail::concat("seen from rank ", rank_, " through rank ", via,
                                                ", which failed on it first and closed its process group's connections");
  ErrorFacts facts;
  facts.op = description;
  facts.transport = "gloo";
  facts.rank = rank_;
  facts.peer = dead.rank;
  facts.peer_pid = std::atoll(dead.pid.c_str());
  facts.loss = PeerLoss::Killed;
  return Error(ErrorKind::PeerLost,
               detail::concat(who, " died during ", description, " (gloo, ", seen, "): its process ", shm::kPeerKilled,
                              " or closing its process group (no exit mark in the store: killed, e.g. by kill -9 or"
                              " the out-of-memory killer, or crashed); look at its output, or the launcher's, and"
                              " that machine's log (dmesg for the out-of-memory killer) [gloo: ",
                              gloo_message, "]"),
               std::move(facts));
}

}  // namespace ddp4j
