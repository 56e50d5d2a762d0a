// flight_recorder.h: the last N collectives and transfers of one process group, kept for the
// moment something goes wrong (a timeout, a failure, a user's dump request): what each was (its
// Fingerprint), over which transport, how far it got (queued, started, completed, failed) and
// when. Mirrors the role of PyTorch's NCCL flight recorder (TORCH_NCCL_TRACE_BUFFER_SIZE), for
// every backend. Java reads it through ProcessGroupNatives.flightRecord and writes the dumps.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "comm/fingerprint.h"

namespace ddp4j {

/** How an op moves its data, for the record. Values match org.ddp4j.debug.FlightRecorder's names. */
enum class FlightTransport : uint32_t { kGloo = 0, kShm = 1, kShmGloo = 2, kNccl = 3 };

/** How far an op got. Values match org.ddp4j.debug.FlightRecorder's names. */
enum class FlightState : uint32_t { kQueued = 0, kStarted = 1, kCompleted = 2, kFailed = 3 };

/**
 * A preallocated ring of the group's last `capacity` ops. Recording costs a few plain stores and
 * one coarse monotonic clock read (now_ns) per state change, and one relaxed fetch_add per op: no
 * allocation, no lock.
 * Each slot is a seqlock: writers of one slot are ordered by the group (an op is recorded before
 * it is started, and started before it finishes), readers (snapshot) retry a slot that changed
 * under them. Only when more than `capacity` ops are in flight at once can an old op's late update
 * and a new op's record meet in one slot; the update then finds another id there and is dropped.
 *
 * Thread-safe as described; capacity 0 records nothing (record returns 0, the other calls ignore 0).
 */
class FlightRecorder {
 public:
  static constexpr size_t kDefaultEntries = 2000;
  /** The largest capacity accepted (a million entries, 128 MB). */
  static constexpr size_t kMaxEntries = size_t{1} << 20;

  /**
   * The capacity DDP4J_FLIGHT_RECORDER_ENTRIES asks for (kDefaultEntries when unset; 0: off).
   * Throws Error(InvalidArgument) naming the variable for a value that is not an integer in
   * [0, kMaxEntries].
   */
  static size_t capacity_from_environment();

  explicit FlightRecorder(size_t capacity);
  FlightRecorder(const FlightRecorder&) = delete;
  FlightRecorder& operator=(const FlightRecorder&) = delete;

  size_t capacity() const { return capacity_; }

  /**
   * Records a new op (state queued, or started when `started`: it runs at once on the caller's
   * thread) and returns its record id (1, 2, ...), which the later calls take; 0 when off.
   * Any thread (the collectives' queue and the transfers record side by side).
   */
  uint64_t record(const Fingerprint& fp, FlightTransport transport, bool started);
  /** The op `id` started moving data (now). */
  void started(uint64_t id);
  /** The op `id` finished, successfully or not (now). */
  void finished(uint64_t id, bool failed);

  /** One op as snapshot reads it. Times are now_ns() values, 0 until reached. */
  struct Entry {
    uint64_t id = 0;
    Fingerprint fp;
    FlightTransport transport = FlightTransport::kGloo;
    FlightState state = FlightState::kQueued;
    int64_t queued_ns = 0;
    int64_t started_ns = 0;
    int64_t finished_ns = 0;
  };

  /** The recorded ops, oldest first; with `only_open`, only those neither completed nor failed. */
  std::vector<Entry> snapshot(bool only_open) const;

  /** The highest collective number (Fingerprint::seq of a collective, not a transfer) that started; 0: none. */
  uint64_t last_started_seq() const { return last_started_seq_.load(std::memory_order_relaxed); }

  /**
   * The clock of the records, in nanoseconds: CLOCK_MONOTONIC_COARSE on Linux (steady_clock's base,
   * read at the kernel's last tick: a few ms resolution, so a microsecond op shows 0 ms), else
   * steady_clock.
   */
  static int64_t now_ns();

 private:
  struct alignas(64) Slot {
    std::atomic<uint64_t> version{0};  // odd while a writer is inside
    std::atomic<uint64_t> id{0};
    std::atomic<uint64_t> fp_words[sizeof(Fingerprint) / 8];
    std::atomic<uint32_t> transport{0};
    std::atomic<uint32_t> state{0};
    std::atomic<int64_t> queued_ns{0};
    std::atomic<int64_t> started_ns{0};
    std::atomic<int64_t> finished_ns{0};
  };
  static_assert(sizeof(Fingerprint) % 8 == 0, "the fingerprint is copied as 64-bit words");

  /** The slot of `id` if it still holds that op, else null. */
  Slot* slot_of(uint64_t id) const;
  static void begin_write(Slot& s);
  static void end_write(Slot& s);

  const size_t capacity_;
  std::unique_ptr<Slot[]> slots_;
  std::atomic<uint64_t> next_id_{0};
  std::atomic<uint64_t> last_started_seq_{0};
};

}  // namespace ddp4j
