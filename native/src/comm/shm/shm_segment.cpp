// The memfd segment and its rendezvous (see shm_segment.h).
#include "comm/shm/shm_segment.h"

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
#include <thread>
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
  std::atomic<uint32_t> attached;  // local ranks that have written their pid
  int32_t pids[ShmSegment::kMaxLocalRanks];
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
  const auto deadline = Clock::now() + timeout;
  const size_t data_bytes = (bytes + 4095) / 4096 * 4096;
  const size_t total = kHeaderBytes + data_bytes;
  const std::string key = prefix + "/segment";
  int fd = -1;
  SegmentHeader* h = nullptr;

  if (local_rank == 0) {
    fd = static_cast<int>(memfd_create("ddp4j-shm", MFD_CLOEXEC));
    DDP4J_CHECK(fd >= 0, Distributed, "shared memory: memfd_create failed: ", errno_str());
    if (ftruncate(fd, static_cast<off_t>(total)) != 0 || (base_ = map_fd(fd, total)) == nullptr) {
      const std::string why = errno_str();
      close(fd);
      throw Error(ErrorKind::Distributed, detail::concat("shared memory: cannot size or map a ", total,
                                                         "-byte segment: ", why));
    }
    mapped_ = total;
    h = static_cast<SegmentHeader*>(base_);
    h->magic = kMagic;
    h->nonce = random_nonce();
    h->bytes = data_bytes;
    h->local_size = static_cast<uint32_t>(local_size);
    h->pids[0] = static_cast<int32_t>(getpid());
    h->attached.store(1, std::memory_order_release);
    std::ostringstream v;
    v << getpid() << ' ' << fd << ' ' << data_bytes << ' ' << h->nonce;
    const std::string s = v.str();
    store.set(key, std::vector<char>(s.begin(), s.end()));
  } else {
    try {
      store.wait({key}, timeout);
    } catch (const std::exception& e) {
      throw Error(ErrorKind::Timeout, detail::concat("shared memory: local rank 0 did not publish the segment ('", key,
                                                     "') within ", duration_str(timeout), ": ", e.what()));
    }
    std::vector<char> raw = store.get(key);
    std::istringstream in(std::string(raw.begin(), raw.end()));
    long long pid = 0, cfd = 0;
    unsigned long long size = 0, nonce = 0;
    DDP4J_CHECK(static_cast<bool>(in >> pid >> cfd >> size >> nonce), Distributed,
                "shared memory: malformed segment key '", key, "'");
    DDP4J_CHECK(size == data_bytes, Distributed, "shared memory: local rank 0 made a ", size,
                "-byte segment, this rank expects ", data_bytes, " (ranks passed different chunk sizes or local sizes)");
    const std::string path = "/proc/" + std::to_string(pid) + "/fd/" + std::to_string(cfd);
    fd = open(path.c_str(), O_RDWR | O_CLOEXEC);
    DDP4J_CHECK(fd >= 0, Distributed, "shared memory: cannot open local rank 0's segment ", path, ": ", errno_str(),
                " (it exited, or runs as another user or undumpable)");
    struct stat st {};
    const bool ok = fstat(fd, &st) == 0 && static_cast<size_t>(st.st_size) == total && (base_ = map_fd(fd, total));
    close(fd);  // the mapping keeps the memory alive
    fd = -1;
    DDP4J_CHECK(ok, Distributed, "shared memory: ", path, " is not the expected ", total, "-byte segment");
    mapped_ = total;
    h = static_cast<SegmentHeader*>(base_);
    if (h->magic != kMagic || h->nonce != nonce || h->local_size != static_cast<uint32_t>(local_size)) {
      release();
      throw Error(ErrorKind::Distributed, detail::concat("shared memory: ", path, " is not this group's segment (a stale '",
                                                         key, "' from an earlier group, or a different local size)"));
    }
    h->pids[local_rank] = static_cast<int32_t>(getpid());
    h->attached.fetch_add(1, std::memory_order_acq_rel);
  }

  // Every rank waits for all pids (the transport watches them); rank 0 keeps its descriptor open
  // until then, since the others open the segment through it.
  auto sleep = std::chrono::microseconds(20);
  while (h->attached.load(std::memory_order_acquire) < static_cast<uint32_t>(local_size)) {
    if (Clock::now() > deadline) {
      const uint32_t n = h->attached.load();
      if (fd >= 0) close(fd);
      release();
      throw Error(ErrorKind::Timeout, detail::concat("shared memory: only ", n, " of ", local_size,
                                                     " local ranks mapped the segment within ", duration_str(timeout)));
    }
    std::this_thread::sleep_for(sleep);
    sleep = std::min(sleep * 2, std::chrono::microseconds(2000));
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
