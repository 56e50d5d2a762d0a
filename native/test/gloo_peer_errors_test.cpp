// What a Gloo collective timeout says when the kernel's socket table shows that the connection to a
// peer is losing packets (the peer is alive, its data does not arrive): a network problem between
// the two hosts, naming the peer, rather than "not every rank took part". Socket tables are
// written here in /proc/net/tcp's format. Returns non-zero on failure.
#include <gloo/transport/tcp/address.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <arpa/inet.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "comm/gloo/peer_errors.h"
#include "test_util.h"

using namespace ddp4j;

namespace {

bool contains(const std::string& s, const std::string& needle) { return s.find(needle) != std::string::npos; }

/** How Gloo prints the IPv4 endpoint ip:port (the form record_peer_addresses keeps). */
std::string gloo_address(const char* ip, uint16_t port) {
  sockaddr_storage ss;
  std::memset(&ss, 0, sizeof(ss));
  auto* in = reinterpret_cast<sockaddr_in*>(&ss);
  in->sin_family = AF_INET;
  in->sin_port = htons(port);
  inet_pton(AF_INET, ip, &in->sin_addr);
  return gloo::transport::tcp::Address(ss).str();
}

const char* kHeader =
    "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n";

/**
 * One ESTABLISHED row from 10.77.0.1:50000 to 10.77.0.2:41394 (remote 02004D0A:A1B2, as the kernel
 * prints it) with `tx_queue` bytes unacknowledged, `retrnsmt` retransmissions and an rto of `rto_ticks`.
 */
std::string row(unsigned tx_queue, unsigned retrnsmt, int rto_ticks) {
  char line[256];
  std::snprintf(line, sizeof(line),
                "   0: 01004D0A:C350 02004D0A:A1B2 01 %08X:00000000 01:00000F3A %08X  1000        0 12345 1"
                " 0000000000000000 %d 4 0 10 -1\n",
                tx_queue, retrnsmt, rto_ticks);
  return line;
}

/** Rank 0's record: peer 1 at 10.77.0.2:41394. */
std::vector<std::vector<std::string>> peers() { return {{}, {gloo_address("10.77.0.2", 41394)}}; }

const char* kGlooTimeout = "Timed out waiting 30000ms for recv operation to complete";

void test_a_lossy_connection_names_the_peer_and_the_network() {
  auto lossy = lossy_peer_connections(std::string(kHeader) + row(4096, 6, 12000), false, peers());
  CHECK(lossy.size() == 1);
  if (lossy.size() != 1) return;
  CHECK(lossy[0].peer == 1);
  CHECK(lossy[0].retransmits == 6);
  CHECK(lossy[0].rto_ms == 120000);
  CHECK(lossy[0].unacknowledged == 4096);
  Error e = translate_gloo_error("allReduce(SUM) of 4 float32", kGlooTimeout, std::chrono::seconds(30), 0, peers(),
                                 lossy);
  const std::string m = e.what();
  std::fprintf(stderr, "message: %s\n", m.c_str());
  CHECK(e.kind() == ErrorKind::Timeout);
  CHECK(lossy[0].host == "10.77.0.2");
  CHECK(contains(m, "the connection to peer rank 1 (host 10.77.0.2) is losing packets"));
  CHECK(contains(m, "6 unrecovered retransmission(s)"));
  CHECK(contains(m, "backed off to 120 s"));
  CHECK(contains(m, "network problem (packet loss) between this host and 10.77.0.2, not a rank"));
  CHECK(!contains(m, "not every rank took part"));
}

void test_a_healthy_connection_is_no_evidence() {
  // rto 200 ms, nothing retransmitted: the peer is simply late, the old message stands.
  auto lossy = lossy_peer_connections(std::string(kHeader) + row(0, 0, 20), false, peers());
  CHECK(lossy.empty());
  Error e = translate_gloo_error("allReduce(SUM) of 4 float32", kGlooTimeout, std::chrono::seconds(30), 0, peers(),
                                 lossy);
  CHECK(contains(e.what(), "not every rank took part"));
}

void test_a_read_timeout_names_the_peer_waited_for() {
  // Gloo's read timeout names the connection by the peer's address; no socket evidence left.
  const std::string gloo = "Read timeout " + gloo_address("10.77.0.2", 41394);
  Error e = translate_gloo_error("allReduce(SUM) of 4 float32", gloo, std::chrono::seconds(8), 0, peers(), {});
  const std::string m = e.what();
  CHECK(e.kind() == ErrorKind::Timeout);
  CHECK(contains(m, "timed out after 8 s on rank 0 waiting for peer rank 1: no data from it arrived in time"));
  CHECK(!contains(m, "not every rank took part"));
}

void test_connections_to_others_are_ignored() {
  // The same losses on a connection to an address that is no peer's (the store, say).
  std::vector<std::vector<std::string>> others = {{}, {gloo_address("10.77.0.3", 41394)}};
  CHECK(lossy_peer_connections(std::string(kHeader) + row(4096, 6, 12000), false, others).empty());
}

}  // namespace

int main() {
  test_a_lossy_connection_names_the_peer_and_the_network();
  test_a_healthy_connection_is_no_evidence();
  test_a_read_timeout_names_the_peer_waited_for();
  test_connections_to_others_are_ignored();
  return ddp4j::test::failure_count() == 0 ? 0 : 1;
}
