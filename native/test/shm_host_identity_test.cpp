// ctest: host identity of the shared-memory transport: its parts, the DDP4J_SHM_HOST_ID override,
// and same_host_ranks grouping ranks (threads over a HashStore) by the identity they publish.
#include <gloo/rendezvous/hash_store.h>

#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "comm/local/shm/host_identity.h"
#include "test_util.h"

using namespace ddp4j;

int main() {
  unsetenv("DDP4J_SHM_HOST_ID");
  const std::string id = shm::host_identity();
  std::printf("host identity: %s\n", id.c_str());
  CHECK(id.find("|net:") != std::string::npos && id.find("|pid:") != std::string::npos);
  CHECK(id.find('?') == std::string::npos);  // every part readable on Linux
  CHECK(shm::host_identity() == id);         // stable

  setenv("DDP4J_SHM_HOST_ID", "fake-host-a", 1);
  CHECK(shm::host_identity() == "fake-host-a");
  setenv("DDP4J_SHM_HOST_ID", "", 1);
  CHECK(shm::host_identity() == id);  // empty means unset
  unsetenv("DDP4J_SHM_HOST_ID");

  // Five ranks on two "hosts": 0, 2, 3 on A; 1, 4 on B.
  gloo::rendezvous::HashStore store;
  const std::vector<std::string> hosts = {"A", "B", "A", "A", "B"};
  std::vector<std::vector<int>> got(hosts.size());
  std::vector<std::thread> threads;
  for (int r = 0; r < static_cast<int>(hosts.size()); r++) {
    threads.emplace_back([&, r] {
      got[r] = shm::same_host_ranks(store, "g1", r, static_cast<int>(hosts.size()), hosts[r], std::chrono::seconds(10));
    });
  }
  for (auto& t : threads) t.join();
  for (int r : {0, 2, 3}) CHECK((got[r] == std::vector<int>{0, 2, 3}));
  for (int r : {1, 4}) CHECK((got[r] == std::vector<int>{1, 4}));
  return test_failures();
}
