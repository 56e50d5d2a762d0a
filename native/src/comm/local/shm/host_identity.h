// host_identity.h: which ranks of a group can share memory. Decided from an identity each rank
// publishes through the store, never from LOCAL_WORLD_SIZE: two ranks share a host only when they
// run under the same kernel boot (boot id), host name, network namespace and pid namespace (the
// transport checks peers' liveness by pid, so pids must mean the same process to every rank).
#pragma once
#include <chrono>
#include <string>
#include <vector>

namespace gloo::rendezvous {
class Store;
}

namespace ddp4j::shm {

/**
 * This process's host identity: "<boot id>|<hostname>|net:<inode>|pid:<inode>", from
 * /proc/sys/kernel/random/boot_id, gethostname(), and the inodes of /proc/self/ns/net and
 * /proc/self/ns/pid. The environment variable DDP4J_SHM_HOST_ID, when set and non-empty, replaces
 * it (tests that pretend to be several hosts on one machine). Parts that cannot be read are
 * written as "?", so such a process only matches another process missing the same parts.
 */
std::string host_identity();

/**
 * Publishes `identity` as "<prefix>/host/<rank>" and reads every rank's, waiting up to `timeout`.
 * Returns the ranks (ascending, `rank` included) whose identity equals this rank's: the group's
 * local ranks on this host, local rank = index in the result. Every rank of the group must call it
 * with the same prefix. Throws Error(Timeout) when not every rank has published within `timeout`.
 */
std::vector<int> same_host_ranks(gloo::rendezvous::Store& store, const std::string& prefix, int rank, int size,
                                 const std::string& identity, std::chrono::milliseconds timeout);

}  // namespace ddp4j::shm
