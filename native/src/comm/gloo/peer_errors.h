// peer_errors.h: what a Gloo error means for the user. Gloo names the peer of a failed connection
// only by its socket address; these functions record each peer rank's addresses after connecting
// (from the store and from the kernel's socket table, /proc/net/tcp) so that an error can say
// "peer rank 1 may have died", and tell Gloo's timeouts from its network errors.
#pragma once
#include <gloo/context.h>
#include <gloo/rendezvous/store.h>

#include <chrono>
#include <string>
#include <vector>

#include "ddp4j/errors.h"

namespace ddp4j {

/** Gloo's message without its "[file.cc:123] " prefixes; users do not need them. */
std::string strip_location(const std::string& message);

/** Whether a Gloo message reports a timeout rather than a network error. */
bool is_gloo_timeout(const std::string& message);

/**
 * Records, for every peer rank of `context`, the addresses Gloo's error messages may use for it:
 * the peer's listening address (read from `gloo_store`, where connectFullMesh published it) and,
 * where this rank accepted the connection, the peer's ephemeral address (from /proc/net/tcp{,6}).
 * Appends to `peer_addresses` (indexed by rank). Best effort: an address not found is left out.
 */
void record_peer_addresses(gloo::rendezvous::Store& gloo_store, gloo::Context& context,
                           std::vector<std::vector<std::string>>* peer_addresses);

/**
 * The peer rank whose closed connection a Gloo network error (not a timeout) reports, by the
 * address `gloo_message` mentions (see record_peer_addresses); -1 when it names none.
 */
int closed_peer(const std::string& gloo_message, const std::vector<std::vector<std::string>>& peer_addresses);

/** What the kernel's socket table says about this rank's TCP connection to one peer rank. */
struct PeerConnectionState {
  int peer = -1;               // the peer's rank
  std::string address;         // the peer's end of the connection, as Gloo prints addresses
  std::string host;            // the peer's IP address, e.g. 10.77.0.2
  long retransmits = 0;        // unrecovered retransmission timeouts in a row (icsk_retransmits)
  long rto_ms = 0;             // the current retransmission timeout: grows (doubles) while packets are lost
  long unacknowledged = 0;     // bytes sent and not yet acknowledged by the peer's host (tx_queue)
};

/**
 * The connections to peer ranks that are losing packets, read from a socket table in the format of
 * /proc/net/tcp (`v6`: /proc/net/tcp6): ESTABLISHED connections whose remote end is one of
 * `peer_addresses` (see record_peer_addresses) with unrecovered retransmissions or a retransmission
 * timeout of 1 s or more (a LAN's is 200 ms until packets are lost and it backs off). At most one
 * per peer, the worst; peers in rank order.
 */
std::vector<PeerConnectionState> lossy_peer_connections(const std::string& table, bool v6,
                                                        const std::vector<std::vector<std::string>>& peer_addresses);

/**
 * The error a failed collective reports: Error(Timeout) naming the op (`description`), the group's
 * `timeout` and `rank` when Gloo timed out (and the peer waited for, where the message or a group
 * of two tells it); else Error(PeerLost, Closed) naming the peer rank whose address `gloo_message`
 * mentions ("peer rank 1 may have died or closed its process group"), or Error(Distributed).
 * A timeout while a connection to a peer is losing packets (`lossy`, from lossy_peer_connections)
 * names that peer, its address and the TCP evidence: the peer's data did not arrive, a network
 * problem between the two hosts, not a rank that did not take part.
 */
Error translate_gloo_error(const std::string& description, const std::string& gloo_message,
                           std::chrono::milliseconds timeout, int rank,
                           const std::vector<std::vector<std::string>>& peer_addresses,
                           const std::vector<PeerConnectionState>& lossy);

/** As above, with `lossy` read from this process's /proc/net/tcp and /proc/net/tcp6. */
Error translate_gloo_error(const std::string& description, const std::string& gloo_message,
                           std::chrono::milliseconds timeout, int rank,
                           const std::vector<std::vector<std::string>>& peer_addresses);

}  // namespace ddp4j
