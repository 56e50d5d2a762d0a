// options.h: how a Gloo process group connects, how long its operations may take, and which of
// its paths (fingerprint checks, small all-reduce, shared memory) it uses.
#pragma once
#include <chrono>
#include <cstddef>
#include <string>

namespace ddp4j {

/**
 * How a ProcessGroupGloo connects and how long its operations may take. Plain values: the Java
 * layer reads the environment (org.ddp4j.distributed.GlooOptions) and passes them down.
 */
struct GlooOptions {
  /** Rendezvous, connection and per-collective timeout. */
  std::chrono::milliseconds timeout = std::chrono::minutes(30);
  /** Address (or host name) this rank binds and advertises to its peers; empty lets Gloo resolve this host's name. */
  std::string hostname = "127.0.0.1";
  /** Network interface to bind instead of a hostname (GLOO_SOCKET_IFNAME in Java); used when hostname is empty. */
  std::string iface;
  /**
   * Before each collective that Gloo runs (ring all-reduce, broadcast, all-gather), exchange the
   * 40-byte Fingerprint (collective number, op, dtype, element count, root, DDP bucket) with
   * every rank and fail cleanly on a mismatch. Gloo itself aborts the process (std::terminate in
   * its network thread) when ranks pass different sizes, so turning this off is only safe for
   * programs known to be correct (DDP4J_GLOO_CHECK_COLLECTIVES=0 in Java). The fingerprints
   * that travel inside ddp4j's own messages (small all-reduce, shared memory) stay on: they cost
   * nothing extra.
   */
  bool check_collectives = true;
  /**
   * All-reduces of at most this many bytes per rank skip Gloo's ring (2 x (size - 1) message
   * rounds, each a rendezvous of Gloo's unbound buffers) and instead send the whole tensor to
   * every peer in one round through buffers registered once per group (SmallAllreduce), then
   * reduce locally in rank order (the same result on every rank; at 2 ranks bit-identical to the
   * ring, since a + b = b + a). Latency-bound sizes such as small DDP buckets save round trips and
   * thread wake-ups; measurements are in benchmarks/RESULTS.md. Costs 2 x (size + 1) x this many
   * bytes and a second set of connections per group; used for groups of 2 to 8 ranks. 0 turns it
   * off (DDP4J_GLOO_SMALL_ALLREDUCE_BYTES in Java).
   */
  size_t small_allreduce_bytes = 256 << 10;
  /**
   * The small all-reduce's connections in Gloo's sync mode: the waiting thread reads its socket
   * itself rather than being woken by Gloo's network thread, which halves the thread wake-ups per
   * message and removes most of the millisecond stalls on a busy machine (DDP4J_GLOO_SMALL_SYNC=0
   * in Java turns it off).
   */
  bool small_allreduce_sync_reads = true;
  /**
   * Ranks that share a host run collectives through shared memory (LocalCollectives): the whole
   * group when it is on one host, the intra-host stages of a hierarchical all-reduce and broadcast
   * otherwise. Off on any rank turns it off for the whole group (DDP4J_SHM=0 in Java).
   */
  bool shm = true;
  /** This rank's host identity for that decision; empty: shm::host_identity() (DDP4J_SHM_HOST_ID in Java). */
  std::string shm_host_id;
};

}  // namespace ddp4j
