// Host identity for the shared-memory transport (see host_identity.h).
#include "comm/local/shm/host_identity.h"

#include <gloo/rendezvous/store.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "core/settings.h"
#include "ddp4j/errors.h"
#include "ddp4j/process_group.h"

namespace ddp4j::shm {
namespace {

std::string first_line(const char* path) {
  std::ifstream in(path);
  std::string line;
  if (!in || !std::getline(in, line) || line.empty()) return "?";
  return line;
}

std::string ns_inode(const char* path) {
  struct stat st {};
  if (stat(path, &st) != 0) return "?";
  return std::to_string(static_cast<unsigned long long>(st.st_ino));
}

std::string hostname() {
  char buf[256] = {};
  if (gethostname(buf, sizeof(buf) - 1) != 0 || buf[0] == '\0') return "?";
  return buf;
}

}  // namespace

std::string host_identity() {
  if (const auto forced = settings::get("DDP4J_SHM_HOST_ID")) return *forced;
  return first_line("/proc/sys/kernel/random/boot_id") + "|" + hostname() + "|net:" + ns_inode("/proc/self/ns/net") +
         "|pid:" + ns_inode("/proc/self/ns/pid");
}

std::vector<int> same_host_ranks(gloo::rendezvous::Store& store, const std::string& prefix, int rank, int size,
                                 const std::string& identity, std::chrono::milliseconds timeout) {
  DDP4J_CHECK_ARG(size >= 1 && rank >= 0 && rank < size, "same_host_ranks: rank ", rank, " of ", size);
  auto key = [&](int r) { return prefix + "/host/" + std::to_string(r); };
  store.set(key(rank), std::vector<char>(identity.begin(), identity.end()));
  std::vector<std::string> keys;
  for (int r = 0; r < size; r++) keys.push_back(key(r));
  try {
    store.wait(keys, timeout);
  } catch (const std::exception& e) {
    throw Error(ErrorKind::Timeout, detail::concat("shared memory: not every rank published its host identity under '",
                                                   prefix, "/host/' within ", duration_str(timeout), ": ", e.what()));
  }
  std::vector<int> local;
  for (int r = 0; r < size; r++) {
    std::vector<char> v = r == rank ? std::vector<char>(identity.begin(), identity.end()) : store.get(key(r));
    if (std::string(v.begin(), v.end()) == identity) local.push_back(r);
  }
  return local;
}

}  // namespace ddp4j::shm
