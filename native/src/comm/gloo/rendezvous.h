// rendezvous.h: how the ranks of a Gloo process group find each other: Gloo's TCP device, the
// join through the store (naming the ranks that never came), and a full mesh of TCP pairs.
#pragma once
#include <chrono>
#include <memory>

#include "comm/gloo/options.h"

namespace gloo {
class Context;
namespace rendezvous {
class Store;
}
namespace transport {
class Device;
}
}  // namespace gloo

namespace ddp4j {
namespace gloo_detail {

/**
 * Gloo's TCP device on options.hostname, else options.iface, else this host's name. Throws
 * Error(Distributed) saying which address failed and how to choose another.
 */
std::shared_ptr<gloo::transport::Device> open_tcp_device(const GlooOptions& options, int rank);

/**
 * Every rank sets "ddp4j/joined/<rank>" in the store and waits for all of them; past `timeout`
 * Error(Timeout) names the ranks that did not join.
 */
void wait_for_ranks(gloo::rendezvous::Store& store, int rank, int size, std::chrono::milliseconds timeout);

/**
 * A full mesh of TCP pairs among the `size` ranks, addresses exchanged under `prefix` in the
 * store. Error(Timeout) or Error(Distributed) says what failed and which address this rank
 * advertised.
 */
std::shared_ptr<gloo::Context> connect_full_mesh(gloo::rendezvous::Store& store, const char* prefix,
                                                 const std::shared_ptr<gloo::transport::Device>& device, int rank,
                                                 int size, std::chrono::milliseconds timeout);

}  // namespace gloo_detail
}  // namespace ddp4j
