// peer_loss.h: every survivor of a killed rank names that rank, over Gloo too. Over TCP a killed
// peer and a survivor that failed and closed its connections look alike (a closed connection), so
// a rank that loses a peer in a collective records the death it saw in the group's store *before*
// closing its connections; a rank that then sees that survivor's connection close reads the record
// and names the dead rank, not the survivor. The exit marks that Java writes
// (org.ddp4j.distributed.ExitMarks) tell a peer that exited or closed its group from a killed one.
#pragma once
#include <gloo/rendezvous/store.h>

#include <memory>
#include <string>

#include "ddp4j/errors.h"

namespace ddp4j {

/** A rank that died (killed or crashed: it left neither an exit mark nor a record), or none (rank -1). */
struct DeadRank {
  int rank = -1;
  std::string pid;      // "" when unknown
  bool exited = false;  // no death: the peer left its exit mark (it exited or closed its group)
};

/**
 * The group's records of lost peers, in its store: "ddp4j/pid/R" (rank R's pid, set at creation),
 * "ddp4j/lost/R" ("D PID": rank R failed because rank D died) and Java's "ddp4j/exited/R". Every
 * store call is bounded by the store itself (Java's ProcessGroupGloo gives a store whose calls give up
 * after a few seconds): a dead or hung store leaves the messages as they were, naming the peer
 * whose connection closed.
 */
class PeerLossRecords {
 public:
  PeerLossRecords(std::shared_ptr<gloo::rendezvous::Store> store, int rank);

  /** Publishes this rank's pid, so that the survivors of its death can name it. Best effort. */
  void publish_pid();

  /**
   * Why peer `peer`'s connection closed: the rank whose death its record names (it failed on that
   * death and closed its connections), the peer itself when it left neither a record nor an exit
   * mark (killed), or none when it exited or closed its group, or the store did not answer.
   */
  DeadRank explain_closed(int peer);

  /** Records that this rank's collective failed because `dead` died. Call before closing the connections. */
  void record(const DeadRank& dead);

  /**
   * The error of collective `description` on this rank for the death of `dead`, which this rank
   * saw directly (`via` == dead.rank) or through survivor `via`'s closed connection.
   */
  Error died_error(const DeadRank& dead, int via, const std::string& description, const std::string& gloo_message) const;

 private:
  /** Whether `key` is set: true, false, or the store did not answer (throws). */
  bool has(const std::string& key);
  std::shared_ptr<gloo::rendezvous::Store> store_;
  int rank_;
};

}  // namespace ddp4j
