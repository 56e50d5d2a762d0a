// The memfd segment and its rendezvous (see shm_segment.h).
#include "comm/local/shm/shm_segment.h"

#include <fcntl.h>
#include <gloo/rendezvous/store.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <random>
#include <sstream>
#include <utility>

#include "ddp4j/errors.h"
#include "ddp4j/process_group.h"

namespace ddp4j::shm {
namespace {

constexpr uint64_t kMagic = 0x6464703473686d31ULL;  // "ddp4shm1"
constexpr size_t kHeaderBytes = 4096;

/** The first page of the mapping. Written by the creator before the key is published. */
struct SegmentHeader {
  uint64_t magic;
  uint64_t nonce;
  uint64_t bytes;
  uint32_t local_size;
  int32_t pids[ShmSegment::kMaxLocalRanks];  // each rank writes its own before it says "ok"
};
static_assert(sizeof(SegmentHeader) <= kHeaderBytes, "segment header must fit its page");

using Clock = std::chrono::steady_clock;

std::string errno_str() { return std::strerror(errno); }

uint64_t random_nonce() {
  std::random_device rd;
  return (static_cast<uint64_t>(rd()) << 32) ^ rd() ^ static_cast<uint64_t>(Clock::now().time_since_epoch().count());
}

void* map_fd(int fd, size_t len) {
  // MAP_POPULATE: fault the pages in now, not during the first (timed) collective.
  void* p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
  return p == MAP_FAILED ? nullptr : p;
}

}  // namespace

ShmSegment::ShmSegment(gloo::rendezvous::Store& store, const std::string& prefix, int local_rank, int local_size,
                       size_t bytes, std::chrono::milliseconds timeout)
    : local_rank_(local_rank), local_size_(local_size) {
  DDP4J_CHECK_ARG(local_size >= 1 && local_size <= kMaxLocalRanks && local_rank >= 0 && local_rank < local_size,
                  "shared memory: local rank ", local_rank, " of ", local_size, " (at most ", kMaxLocalRanks, ")");
  const size_t data_bytes = (bytes + 4095) / 4096 * 4096;
  const size_t total = kHeaderBytes + data_bytes;
  const std::string key = prefix + "/segment";
  auto attach_key = [&](int r) { return prefix + "/attached/" + std::to_string(r); };
  auto set = [&](const std::string& k, const std::string& v) { store.set(k, std::vector<char>(v.begin(), v.end())); };
  auto wait_keys = [&](const std::vector<std::string>& keys, const char* what) {
    try {
      store.wait(keys, timeout);
    } catch (const std::exception& e) {
      throw Error(ErrorKind::Timeout, detail::concat("shared memory: ", what, " within ", duration_str(timeout),
                                                     " (keys under '", prefix, "/'): ", e.what()));
    }
  };
  int fd = -1;

  // Every failure below is published before it is thrown, so that all local ranks fail together
  // (and a process group falls back to Gloo on all of them) instead of waiting for the timeout.
  std::string failure;
  if (local_rank == 0) {
    fd = static_cast<int>(memfd_create("ddp4j-shm", MFD_CLOEXEC));
    if (fd < 0) {
      failure = "memfd_create failed: " + errno_str();
    } else if (ftruncate(fd, static_cast<off_t>(total)) != 0 || (base_ = map_fd(fd, total)) == nullptr) {
      failure = detail::concat("cannot size or map a ", total, "-byte segment: ", errno_str());
      close(fd);
      fd = -1;
    }
    if (!failure.empty()) {
      set(key, "fail " + failure);
      throw Error(ErrorKind::Distributed, "shared memory: " + failure);
    }
    mapped_ = total;
    auto* h = static_cast<SegmentHeader*>(base_);
    h->magic = kMagic;
    h->nonce = random_nonce();
    h->bytes = data_bytes;
    h->local_size = static_cast<uint32_t>(local_size);
    h->pids[0] = static_cast<int32_t>(getpid());
    std::ostringstream v;
    v << "ok " << getpid() << ' ' << fd << ' ' << data_bytes << ' ' << h->nonce;
    set(key, v.str());
  } else {
    wait_keys({key}, "local rank 0 did not publish the segment");
    std::vector<char> raw = store.get(key);
    const std::string value(raw.begin(), raw.end());
    if (value.rfind("fail ", 0) == 0) {
      throw Error(ErrorKind::Distributed, "shared memory: local rank 0 could not create the segment: " + value.substr(5));
    }
    std::istringstream in(value);
    std::string tag;
    long long pid = 0, cfd = 0;
    unsigned long long size = 0, nonce = 0;
    if (!(in >> tag >> pid >> cfd >> size >> nonce) || tag != "ok") {
      failure = "malformed segment key '" + key + "'";
    } else if (size != data_bytes) {
      failure = detail::concat("local rank 0 made a ", size, "-byte segment, local rank ", local_rank, " expects ",
                               data_bytes, " (ranks passed different chunk sizes or local sizes)");
    } else {
      const std::string proc = "/proc/" + std::to_string(pid) + "/fd/" + std::to_string(cfd);
      fd = open(proc.c_str(), O_RDWR | O_CLOEXEC);
      struct stat st {};
      if (fd < 0) {
        failure = detail::concat("local rank ", local_rank, " cannot open ", proc, ": ", errno_str(),
                                 " (local rank 0 exited, or runs as another user or undumpable)");
      } else if (fstat(fd, &st) != 0 || static_cast<size_t>(st.st_size) != total ||
                 (base_ = map_fd(fd, total)) == nullptr) {
        failure = detail::concat("local rank ", local_rank, ": ", proc, " is not the expected ", total,
                                 "-byte segment");
      } else {
        mapped_ = total;
        const auto* h = static_cast<const SegmentHeader*>(base_);
        if (h->magic != kMagic || h->nonce != nonce || h->local_size != static_cast<uint32_t>(local_size)) {
          failure = detail::concat(proc, " is not this group's segment (a stale '", key,
                                   "' of an earlier group, or a different local size)");
        }
      }
      if (fd >= 0) close(fd);  // the mapping keeps the memory alive
      fd = -1;
    }
    if (!failure.empty()) {
      release();
      set(attach_key(local_rank), "fail " + failure);
      throw Error(ErrorKind::Distributed, "shared memory: " + failure);
    }
    static_cast<SegmentHeader*>(base_)->pids[local_rank] = static_cast<int32_t>(getpid());
  }
  set(attach_key(local_rank), "ok");

  // Every rank waits for every rank's verdict (the transport needs all pids); rank 0 keeps its
  // descriptor open until then, since the others open the segment through it.
  std::vector<std::string> keys;
  for (int r = 0; r < local_size; r++) keys.push_back(attach_key(r));
  try {
    wait_keys(keys, "not every local rank mapped the segment");
    for (int r = 0; r < local_size; r++) {
      if (r == local_rank) continue;
      std::vector<char> v = store.get(attach_key(r));
      const std::string verdict(v.begin(), v.end());
      DDP4J_CHECK(verdict == "ok", Distributed, "shared memory: ",
                  verdict.rfind("fail ", 0) == 0 ? verdict.substr(5) : "local rank " + std::to_string(r) + " failed");
    }
  } catch (...) {
    if (fd >= 0) close(fd);
    release();
    throw;
  }
  if (fd >= 0) close(fd);
  data_ = static_cast<char*>(base_) + kHeaderBytes;
  bytes_ = data_bytes;
}

ShmSegment::~ShmSegment() { release(); }

ShmSegment::ShmSegment(ShmSegment&& o) noexcept { *this = std::move(o); }

ShmSegment& ShmSegment::operator=(ShmSegment&& o) noexcept {
  if (this != &o) {
    release();
    std::swap(base_, o.base_);
    std::swap(mapped_, o.mapped_);
    std::swap(data_, o.data_);
    std::swap(bytes_, o.bytes_);
    local_rank_ = o.local_rank_;
    local_size_ = o.local_size_;
  }
  return *this;
}

pid_t ShmSegment::pid(int local_rank) const {
  DDP4J_CHECK_ARG(base_ != nullptr && local_rank >= 0 && local_rank < local_size_, "shared memory: no local rank ",
                  local_rank);
  return static_cast<const SegmentHeader*>(base_)->pids[local_rank];
}

void ShmSegment::release() noexcept {
  if (base_ != nullptr) munmap(base_, mapped_);
  base_ = nullptr;
  data_ = nullptr;
  mapped_ = bytes_ = 0;
}

}  // namespace ddp4j::shm
