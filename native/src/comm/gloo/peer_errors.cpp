// Naming the rank behind a failed Gloo connection, and turning Gloo's messages into ddp4j errors.
// See peer_errors.h.
#include "comm/gloo/peer_errors.h"

#include <gloo/context.h>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/pair.h>
#include <gloo/transport/tcp/address.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "ddp4j/process_group.h"

namespace ddp4j {
namespace {

bool contains(const std::string& s, const char* needle) { return s.find(needle) != std::string::npos; }

/** Whether message mentions address as a whole (":1234" must not match ":12345"). */
bool mentions_address(const std::string& message, const std::string& address) {
  for (size_t at = message.find(address); at != std::string::npos; at = message.find(address, at + 1)) {
    size_t end = at + address.size();
    if (end >= message.size() || !std::isdigit(static_cast<unsigned char>(message[end]))) return true;
  }
  return false;
}

/** An IPv4/IPv6 socket address, as Gloo's tcp::Address holds it. */
bool same_endpoint(const sockaddr_storage& a, const sockaddr_storage& b) {
  if (a.ss_family != b.ss_family) return false;
  if (a.ss_family == AF_INET) {
    const auto& x = reinterpret_cast<const sockaddr_in&>(a);
    const auto& y = reinterpret_cast<const sockaddr_in&>(b);
    return x.sin_port == y.sin_port && x.sin_addr.s_addr == y.sin_addr.s_addr;
  }
  if (a.ss_family == AF_INET6) {
    const auto& x = reinterpret_cast<const sockaddr_in6&>(a);
    const auto& y = reinterpret_cast<const sockaddr_in6&>(b);
    return x.sin6_port == y.sin6_port && std::memcmp(&x.sin6_addr, &y.sin6_addr, sizeof(in6_addr)) == 0;
  }
  return false;
}

/** Parses a /proc/net/tcp{,6} endpoint "0100007F:1F90" (address words as the kernel prints them, port in host order). */
bool parse_proc_endpoint(const std::string& text, int family, sockaddr_storage* out) {
  size_t colon = text.find(':');
  if (colon == std::string::npos) return false;
  const std::string hex = text.substr(0, colon);
  const unsigned long port = std::strtoul(text.c_str() + colon + 1, nullptr, 16);
  std::memset(out, 0, sizeof(*out));
  if (family == AF_INET && hex.size() == 8) {
    auto* in = reinterpret_cast<sockaddr_in*>(out);
    in->sin_family = AF_INET;
    in->sin_port = htons(static_cast<uint16_t>(port));
    in->sin_addr.s_addr = static_cast<uint32_t>(std::strtoul(hex.c_str(), nullptr, 16));
    return true;
  }
  if (family == AF_INET6 && hex.size() == 32) {
    auto* in6 = reinterpret_cast<sockaddr_in6*>(out);
    in6->sin6_family = AF_INET6;
    in6->sin6_port = htons(static_cast<uint16_t>(port));
    for (int w = 0; w < 4; w++) {
      uint32_t word = static_cast<uint32_t>(std::strtoul(hex.substr(static_cast<size_t>(w) * 8, 8).c_str(), nullptr, 16));
      std::memcpy(reinterpret_cast<char*>(&in6->sin6_addr) + w * 4, &word, 4);
    }
    return true;
  }
  return false;
}

/**
 * The remote end of the established TCP connection whose local end is `local`, from the kernel's
 * socket table. Gloo's listening side of a pair names its peer by that remote (ephemeral) address
 * in error messages; nothing in Gloo's public API reveals it.
 */
bool remote_of_connection(const sockaddr_storage& local, sockaddr_storage* remote) {
  const bool v6 = local.ss_family == AF_INET6;
  std::ifstream table(v6 ? "/proc/net/tcp6" : "/proc/net/tcp");
  std::string line;
  std::getline(table, line);  // header
  while (std::getline(table, line)) {
    std::istringstream fields(line);
    std::string slot, local_text, remote_text, state;
    if (!(fields >> slot >> local_text >> remote_text >> state)) continue;
    if (state != "01") continue;  // ESTABLISHED
    sockaddr_storage l;
    if (!parse_proc_endpoint(local_text, local.ss_family, &l) || !same_endpoint(l, local)) continue;
    return parse_proc_endpoint(remote_text, local.ss_family, remote);
  }
  return false;
}

std::string read_file(const char* path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

/** "120 s", "1.5 s", "400 ms". */
std::string millis_str(long ms) {
  if (ms < 1000) return detail::concat(ms, " ms");
  if (ms % 1000 == 0) return detail::concat(ms / 1000, " s");
  return detail::concat(ms / 1000, ".", (ms % 1000) / 100, " s");
}

}  // namespace

std::vector<PeerConnectionState> lossy_peer_connections(const std::string& table, bool v6,
                                                        const std::vector<std::vector<std::string>>& peer_addresses) {
  using gloo::transport::tcp::Address;
  const int family = v6 ? AF_INET6 : AF_INET;
  std::vector<PeerConnectionState> worst(peer_addresses.size());
  std::istringstream lines(table);
  std::string line;
  std::getline(lines, line);  // header
  while (std::getline(lines, line)) {
    // sl local rem st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode refcnt sk rto ...
    std::istringstream fields(line);
    std::vector<std::string> f;
    for (std::string word; fields >> word && f.size() < 13;) f.push_back(word);
    if (f.size() < 13 || f[3] != "01") continue;  // ESTABLISHED only
    sockaddr_storage remote;
    if (!parse_proc_endpoint(f[2], family, &remote)) continue;
    std::string address;
    try {
      address = Address(remote).str();
    } catch (const std::exception&) {
      continue;
    }
    for (size_t peer = 0; peer < peer_addresses.size(); peer++) {
      const auto& names = peer_addresses[peer];
      if (std::find(names.begin(), names.end(), address) == names.end()) continue;
      PeerConnectionState s;
      s.peer = static_cast<int>(peer);
      s.address = address;
      char ip[INET6_ADDRSTRLEN] = {0};
      const void* raw = v6 ? static_cast<const void*>(&reinterpret_cast<const sockaddr_in6&>(remote).sin6_addr)
                           : static_cast<const void*>(&reinterpret_cast<const sockaddr_in&>(remote).sin_addr);
      s.host = inet_ntop(family, raw, ip, sizeof(ip)) ? ip : address;
      s.unacknowledged = static_cast<long>(std::strtoul(f[4].substr(0, f[4].find(':')).c_str(), nullptr, 16));
      s.retransmits = static_cast<long>(std::strtoul(f[6].c_str(), nullptr, 16));
      s.rto_ms = std::strtol(f[12].c_str(), nullptr, 10) * 1000 / 100;  // clock ticks (USER_HZ, 100 a second)
      if (s.retransmits == 0 && s.rto_ms < 1000) continue;
      PeerConnectionState& w = worst[peer];
      if (w.peer < 0 || s.rto_ms > w.rto_ms || (s.rto_ms == w.rto_ms && s.retransmits > w.retransmits)) w = s;
    }
  }
  std::vector<PeerConnectionState> out;
  for (const auto& w : worst) {
    if (w.peer >= 0) out.push_back(w);
  }
  return out;
}

std::string strip_location(const std::string& message) {
  std::string m = message;
  // Nested messages repeat the prefix ("[a.cc:1] [b.cc:2] text"); drop each leading one.
  while (m.size() > 2 && m[0] == '[') {
    size_t close = m.find("] ");
    if (close == std::string::npos || m.find(".cc:", 0) > close) break;
    m = m.substr(close + 2);
  }
  return m;
}

bool is_gloo_timeout(const std::string& message) {
  return contains(message, "Timed out") || contains(message, "timeout") || contains(message, "Timeout");
}


void record_peer_addresses(gloo::rendezvous::Store& gloo_store, gloo::Context& context,
                           std::vector<std::vector<std::string>>* peer_addresses) {
  const int rank = context.rank;
  const int size = context.size;
  // Gloo's error messages name the peer of a failed connection by its address: the peer's
  // listening address where this rank connected, the peer's ephemeral address where this rank
  // accepted. Record both forms for each rank so that errors can name the rank. Best effort.
  using gloo::transport::tcp::Address;
  peer_addresses->resize(static_cast<size_t>(size));
  for (int i = 0; i < size; i++) {
    if (i == rank) continue;
    auto& names = (*peer_addresses)[static_cast<size_t>(i)];
    try {
      std::vector<char> all = gloo_store.get(std::to_string(i));  // rank i's addresses, one per peer
      const size_t chunk = all.size() / static_cast<size_t>(size - 1);
      const size_t index = static_cast<size_t>(rank > i ? rank - 1 : rank);
      if (chunk > 0 && all.size() >= (index + 1) * chunk) {
        names.push_back(Address(std::vector<char>(all.begin() + static_cast<long>(index * chunk),
                                                  all.begin() + static_cast<long>((index + 1) * chunk)))
                            .str());
      }
    } catch (const std::exception&) {
    }
    try {
      Address self(context.getPair(i)->address().bytes());
      sockaddr_storage remote;
      if (remote_of_connection(self.getSockaddr(), &remote)) names.push_back(Address(remote).str());
    } catch (const std::exception&) {
    }
  }
}

int closed_peer(const std::string& gloo_message, const std::vector<std::vector<std::string>>& peer_addresses) {
  if (is_gloo_timeout(gloo_message)) return -1;
  for (size_t i = 0; i < peer_addresses.size(); i++) {
    for (const std::string& address : peer_addresses[i]) {
      if (!address.empty() && mentions_address(gloo_message, address)) return static_cast<int>(i);
    }
  }
  return -1;
}

Error translate_gloo_error(const std::string& desc, const std::string& gloo_message, std::chrono::milliseconds timeout,
                           int rank, const std::vector<std::vector<std::string>>& peer_addresses) {
  std::vector<PeerConnectionState> lossy;
  if (is_gloo_timeout(gloo_message)) {
    for (bool v6 : {false, true}) {
      for (auto& c : lossy_peer_connections(read_file(v6 ? "/proc/net/tcp6" : "/proc/net/tcp"), v6, peer_addresses)) {
        lossy.push_back(c);
      }
    }
  }
  return translate_gloo_error(desc, gloo_message, timeout, rank, peer_addresses, lossy);
}

Error translate_gloo_error(const std::string& desc, const std::string& gloo_message, std::chrono::milliseconds timeout,
                           int rank, const std::vector<std::vector<std::string>>& peer_addresses,
                           const std::vector<PeerConnectionState>& lossy) {
  ErrorFacts facts;
  facts.op = desc;
  facts.transport = "gloo";
  facts.rank = rank;
  // With one peer, that peer is the one waited for or lost, whatever Gloo's message says.
  const int only_peer = peer_addresses.size() == 2 ? 1 - rank : -1;
  if (is_gloo_timeout(gloo_message)) {
    facts.timeout_ms = timeout.count();
    facts.peer = only_peer;
  }
  if (is_gloo_timeout(gloo_message) && !lossy.empty()) {
    // The peer may well be alive and calling the same collective: its packets are being lost.
    std::string evidence;
    for (const PeerConnectionState& c : lossy) {
      evidence += detail::concat(evidence.empty() ? "" : "; ", "the connection to peer rank ", c.peer, " (host ", c.host,
                                 ") is losing packets (", c.retransmits, " unrecovered retransmission(s), retransmission"
                                 " timeout backed off to ", millis_str(c.rto_ms), ", ", c.unacknowledged,
                                 " byte(s) unacknowledged)");
    }
    const PeerConnectionState& first = lossy.front();
    facts.peer = first.peer;
    facts.packet_loss = true;
    return Error(ErrorKind::Timeout,
                 detail::concat(desc, " timed out after ", duration_str(timeout), " on rank ", rank, ": ", evidence,
                                ": peer rank ", first.peer, "'s data did not arrive in time - a network problem"
                                " (packet loss) between this host and ", first.host, ", not a rank that did not take part; check the link between the two hosts (ping,"
                                " tc/netem rules, a firewall, the MTU) [gloo: ",
                                gloo_message, "]"),
                 std::move(facts));
  }
  if (is_gloo_timeout(gloo_message)) {
    // A read timeout on one connection ("Read timeout [10.77.0.1]:63879") names the peer waited for.
    for (size_t i = 0; i < peer_addresses.size(); i++) {
      for (const std::string& address : peer_addresses[i]) {
        if (address.empty() || !mentions_address(gloo_message, address)) continue;
        facts.peer = static_cast<int>(i);
        return Error(ErrorKind::Timeout,
                     detail::concat(desc, " timed out after ", duration_str(timeout), " on rank ", rank,
                                    " waiting for peer rank ", i, ": no data from it arrived in time on their"
                                    " connection; peer rank ", i, " may be stuck or stopped, or the network between"
                                    " this host and its host may be losing packets (its launcher's keep-alive tells"
                                    " which) [gloo: ",
                                    gloo_message, "]"),
                     std::move(facts));
      }
    }
    return Error(ErrorKind::Timeout,
                 detail::concat(desc, " timed out after ", duration_str(timeout), " on rank ", rank,
                                only_peer >= 0 ? detail::concat(" waiting for peer rank ", only_peer) : std::string(),
                                ": not every rank took part in time (a rank may be stuck or slower than the timeout;"
                                " raise the timeout of initProcessGroup or DDP4J_TIMEOUT_SECONDS if the work is just"
                                " slow) [gloo: ",
                                gloo_message, "]"),
                 std::move(facts));
  }
  const int peer = closed_peer(gloo_message, peer_addresses);
  if (peer >= 0) {
    facts.peer = peer;
    facts.loss = PeerLoss::Closed;
    return Error(ErrorKind::PeerLost, detail::concat(desc, " failed on rank ", rank, ": peer rank ", peer,
                                                     " may have died or closed its process group [gloo: ",
                                                     gloo_message, "]"),
                 std::move(facts));
  }
  return Error(ErrorKind::Distributed,
               detail::concat(desc, " failed on rank ", rank, ": ", gloo_message,
                              " (a peer may have died or closed its process group)"),
               std::move(facts));
}

}  // namespace ddp4j
