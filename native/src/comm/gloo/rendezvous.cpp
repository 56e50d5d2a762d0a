// The Gloo group's rendezvous: TCP device, join through the store, full mesh; see rendezvous.h.
#include "comm/gloo/rendezvous.h"

#include <gloo/common/error.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/tcp/device.h>

#include <sstream>
#include <string>
#include <vector>

#include "comm/gloo/peer_errors.h"
#include "ddp4j/process_group.h"

namespace ddp4j {
namespace gloo_detail {

using Millis = std::chrono::milliseconds;

std::shared_ptr<gloo::transport::Device> open_tcp_device(const GlooOptions& options, int rank) {
  try {
    gloo::transport::tcp::attr attr;
    if (!options.hostname.empty()) {
      attr.hostname = options.hostname;
    } else if (!options.iface.empty()) {
      attr.iface = options.iface;
    }
    return gloo::transport::tcp::CreateDevice(attr);
  } catch (const std::exception& e) {
    std::string where = !options.hostname.empty() ? "address \"" + options.hostname + "\""
                        : !options.iface.empty()  ? "interface \"" + options.iface + "\""
                                                  : std::string("this host's name");
    throw Error(ErrorKind::Distributed,
                detail::concat("rank ", rank, ": cannot open Gloo's TCP transport on ", where, ": ",
                               strip_location(e.what()),
                               "; set DDP4J_GLOO_HOSTNAME to an address of this machine that the other ranks can reach"
                               " (or GLOO_SOCKET_IFNAME to its network interface)"));
  }
}

void wait_for_ranks(gloo::rendezvous::Store& store, int rank, int size, Millis timeout) {
  const int r = rank;
  const int n = size;
  auto key = [](int i) { return "ddp4j/joined/" + std::to_string(i); };
  const std::string mine = std::to_string(r);
  store.set(key(r), std::vector<char>(mine.begin(), mine.end()));
  std::vector<std::string> keys;
  for (int i = 0; i < n; i++) keys.push_back(key(i));

  bool timed_out = false;
  std::string cause;
  try {
    store.wait(keys, timeout);
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::Timeout) throw;
    timed_out = true;
    cause = e.what();
  } catch (const gloo::IoException& e) {
    if (!is_gloo_timeout(e.what())) throw Error(ErrorKind::Distributed, strip_location(e.what()));
    timed_out = true;
    cause = strip_location(e.what());
  }
  if (!timed_out) return;

  // Which ranks are missing? Probe each key with a tiny timeout (0 means "forever" for Gloo's stores).
  std::vector<int> missing;
  for (int i = 0; i < n; i++) {
    try {
      store.wait({key(i)}, Millis(1));
    } catch (const std::exception&) {
      missing.push_back(i);
    }
  }
  std::ostringstream list;
  for (size_t i = 0; i < missing.size(); i++) list << (i ? ", " : "") << missing[i];
  std::string who = missing.empty() ? std::string("some ranks")
                    : missing.size() == 1 ? detail::concat("rank ", list.str(), " of ", n)
                                          : detail::concat("ranks [", list.str(), "] of ", n);
  // Why they are missing is the caller's to say (a new job: not started; newGroup: not calling it).
  ErrorFacts facts;
  facts.op = "rendezvous";
  facts.transport = "store";
  facts.rank = r;
  facts.peer = missing.size() == 1 ? missing[0] : -1;
  facts.timeout_ms = timeout.count();
  throw Error(ErrorKind::Timeout,
              detail::concat(who, " did not join within ", duration_str(timeout), " (seen from rank ", r, ", store: ",
                             cause, ")"),
              std::move(facts));
}

std::shared_ptr<gloo::Context> connect_full_mesh(gloo::rendezvous::Store& store, const char* prefix,
                                                 const std::shared_ptr<gloo::transport::Device>& device, int rank,
                                                 int size, Millis timeout) {
  auto context = std::make_shared<gloo::rendezvous::Context>(rank, size);
  context->setTimeout(timeout);
  gloo::rendezvous::PrefixStore gloo_store(prefix, store);
  try {
    auto dev = device;  // Gloo takes a non-const reference
    context->connectFullMesh(gloo_store, dev);
  } catch (const Error& e) {
    // From the Java store (a Java exception turned into a C++ one).
    throw Error(e.kind(), detail::concat("rank ", rank, " of ", size,
                                         ": connecting to the other ranks failed: ", e.what()));
  } catch (const std::exception& e) {
    std::string m = strip_location(e.what());
    throw Error(is_gloo_timeout(m) ? ErrorKind::Timeout : ErrorKind::Distributed,
                detail::concat("rank ", rank, " of ", size, ": connecting to the other ranks failed (",
                               m, ") within ", duration_str(timeout),
                               "; check that every rank can reach the address the others advertise (this rank: ",
                               device->str(), "; set DDP4J_GLOO_HOSTNAME to change it)"));
  }
  return context;
}

}  // namespace gloo_detail
}  // namespace ddp4j
