// The flight recorder's ring (see flight_recorder.h).
#include "comm/flight_recorder.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <time.h>

#include "core/settings.h"
#include "ddp4j/errors.h"

namespace ddp4j {

namespace {
bool is_transfer(uint32_t kind) { return kind == Fingerprint::kSend || kind == Fingerprint::kRecv; }
}  // namespace

size_t FlightRecorder::capacity_from_environment() {
  const auto raw = settings::get("DDP4J_FLIGHT_RECORDER_ENTRIES");
  if (!raw) return kDefaultEntries;
  const std::string v = *raw;
  char* end = nullptr;
  errno = 0;
  const unsigned long long n = std::strtoull(v.c_str(), &end, 10);
  DDP4J_CHECK_ARG(!v.empty() && v[0] != '-' && end != nullptr && *end == '\0' && errno == 0 && n <= kMaxEntries,
                  "DDP4J_FLIGHT_RECORDER_ENTRIES=\"", v, "\" is not a number of entries in [0, ", kMaxEntries,
                  "]; unset it for the default (", kDefaultEntries, "), or set 0 to turn the flight recorder off");
  return static_cast<size_t>(n);
}

FlightRecorder::FlightRecorder(size_t capacity)
    : capacity_(capacity), slots_(capacity > 0 ? new Slot[capacity] : nullptr) {}

int64_t FlightRecorder::now_ns() {
#ifdef CLOCK_MONOTONIC_COARSE
  // The kernel's last tick of CLOCK_MONOTONIC (steady_clock's base): ~7 ns a read against ~40 ns
  // for the exact clock on a busy VM, twice per collective; a few ms resolution is plenty for
  // stalls of seconds and for ordering (the record ids order the ops exactly).
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
#else
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
#endif
}

// Writers of one slot are ordered by the group, so the version moves by plain stores; the fences
// keep the field stores inside the odd window on every architecture (on x86 they cost nothing).
void FlightRecorder::begin_write(Slot& s) {
  s.version.store(s.version.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
}

void FlightRecorder::end_write(Slot& s) {
  s.version.store(s.version.load(std::memory_order_relaxed) + 1, std::memory_order_release);
}

uint64_t FlightRecorder::record(const Fingerprint& fp, FlightTransport transport, bool started) {
  if (capacity_ == 0) return 0;
  const uint64_t id = next_id_.fetch_add(1, std::memory_order_relaxed) + 1;
  Slot& s = slots_[id % capacity_];
  const int64_t now = now_ns();
  uint64_t words[sizeof(Fingerprint) / 8];
  std::memcpy(words, &fp, sizeof(Fingerprint));
  begin_write(s);
  s.id.store(id, std::memory_order_relaxed);
  for (size_t i = 0; i < sizeof(Fingerprint) / 8; i++) s.fp_words[i].store(words[i], std::memory_order_relaxed);
  s.transport.store(static_cast<uint32_t>(transport), std::memory_order_relaxed);
  s.state.store(static_cast<uint32_t>(started ? FlightState::kStarted : FlightState::kQueued),
                std::memory_order_relaxed);
  s.queued_ns.store(now, std::memory_order_relaxed);
  s.started_ns.store(started ? now : 0, std::memory_order_relaxed);
  s.finished_ns.store(0, std::memory_order_relaxed);
  end_write(s);
  if (started && !is_transfer(fp.kind)) last_started_seq_.store(fp.seq, std::memory_order_relaxed);
  return id;
}

FlightRecorder::Slot* FlightRecorder::slot_of(uint64_t id) const {
  if (id == 0 || capacity_ == 0) return nullptr;
  Slot& s = slots_[id % capacity_];
  return s.id.load(std::memory_order_relaxed) == id ? &s : nullptr;
}

void FlightRecorder::started(uint64_t id) {
  Slot* s = slot_of(id);
  if (s == nullptr) return;
  const int64_t now = now_ns();
  begin_write(*s);
  s->state.store(static_cast<uint32_t>(FlightState::kStarted), std::memory_order_relaxed);
  s->started_ns.store(now, std::memory_order_relaxed);
  end_write(*s);
  Fingerprint fp;
  uint64_t words[sizeof(Fingerprint) / 8];
  for (size_t i = 0; i < sizeof(Fingerprint) / 8; i++) words[i] = s->fp_words[i].load(std::memory_order_relaxed);
  std::memcpy(&fp, words, sizeof(Fingerprint));
  if (!is_transfer(fp.kind)) last_started_seq_.store(fp.seq, std::memory_order_relaxed);
}

void FlightRecorder::finished(uint64_t id, bool failed) {
  Slot* s = slot_of(id);
  if (s == nullptr) return;
  const int64_t now = now_ns();
  begin_write(*s);
  s->state.store(static_cast<uint32_t>(failed ? FlightState::kFailed : FlightState::kCompleted),
                 std::memory_order_relaxed);
  if (s->started_ns.load(std::memory_order_relaxed) == 0) s->started_ns.store(now, std::memory_order_relaxed);
  s->finished_ns.store(now, std::memory_order_relaxed);
  end_write(*s);
}

std::vector<FlightRecorder::Entry> FlightRecorder::snapshot(bool only_open) const {
  std::vector<Entry> out;
  if (capacity_ == 0) return out;
  out.reserve(only_open ? 4 : capacity_);
  for (size_t i = 0; i < capacity_; i++) {
    const Slot& s = slots_[i];
    Entry e;
    bool read = false;
    for (int attempt = 0; attempt < 100 && !read; attempt++) {
      const uint64_t v1 = s.version.load(std::memory_order_acquire);
      if (v1 & 1) continue;
      e.id = s.id.load(std::memory_order_relaxed);
      uint64_t words[sizeof(Fingerprint) / 8];
      for (size_t w = 0; w < sizeof(Fingerprint) / 8; w++) words[w] = s.fp_words[w].load(std::memory_order_relaxed);
      std::memcpy(&e.fp, words, sizeof(Fingerprint));
      e.transport = static_cast<FlightTransport>(s.transport.load(std::memory_order_relaxed));
      e.state = static_cast<FlightState>(s.state.load(std::memory_order_relaxed));
      e.queued_ns = s.queued_ns.load(std::memory_order_relaxed);
      e.started_ns = s.started_ns.load(std::memory_order_relaxed);
      e.finished_ns = s.finished_ns.load(std::memory_order_relaxed);
      std::atomic_thread_fence(std::memory_order_acquire);
      read = s.version.load(std::memory_order_relaxed) == v1;
    }
    if (!read || e.id == 0) continue;  // never used, or rewritten all along (skip it rather than wait)
    if (only_open && (e.state == FlightState::kCompleted || e.state == FlightState::kFailed)) continue;
    out.push_back(e);
  }
  std::sort(out.begin(), out.end(), [](const Entry& a, const Entry& b) { return a.id < b.id; });
  return out;
}

}  // namespace ddp4j
