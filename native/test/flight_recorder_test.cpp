// The flight recorder's ring: states and times as ops go through, wrap-around keeps the newest,
// a stale update after wrap-around is dropped, only_open, capacity 0, and the environment variable.
#include "comm/flight_recorder.h"

#include <cstdlib>
#include <thread>

#include "ddp4j/errors.h"
#include "test_util.h"

using namespace ddp4j;

namespace {

Fingerprint allreduce(uint64_t seq) {
  Fingerprint fp;
  fp.seq = seq;
  fp.kind = Fingerprint::kAllReduce;
  fp.arg = 1;
  fp.numel = 29045;
  fp.bucket = 0;
  fp.buckets = 1;
  return fp;
}

void states_and_times() {
  FlightRecorder r(8);
  const uint64_t a = r.record(allreduce(1), FlightTransport::kShm, /*started=*/false);
  const uint64_t b = r.record(allreduce(2), FlightTransport::kShm, /*started=*/true);
  CHECK(a == 1 && b == 2);
  CHECK(r.last_started_seq() == 2);  // b ran inline while a was queued (the numbers say what started)
  r.started(a);
  CHECK(r.last_started_seq() == 1);
  r.finished(a, /*failed=*/false);
  r.finished(b, /*failed=*/true);
  auto all = r.snapshot(false);
  CHECK(all.size() == 2);
  CHECK(all[0].id == 1 && all[0].fp.seq == 1 && all[0].fp.numel == 29045 && all[0].fp.buckets == 1);
  CHECK(all[0].state == FlightState::kCompleted && all[1].state == FlightState::kFailed);
  CHECK(all[0].transport == FlightTransport::kShm);
  CHECK(all[0].queued_ns > 0 && all[0].started_ns >= all[0].queued_ns && all[0].finished_ns >= all[0].started_ns);
  CHECK(all[1].started_ns == all[1].queued_ns);  // started at the call
  CHECK(r.snapshot(true).empty());
}

void wraps_around_keeping_the_newest() {
  FlightRecorder r(4);
  for (uint64_t s = 1; s <= 10; s++) r.finished(r.record(allreduce(s), FlightTransport::kGloo, true), false);
  const uint64_t open = r.record(allreduce(11), FlightTransport::kGloo, false);
  auto all = r.snapshot(false);
  CHECK(all.size() == 4);
  CHECK(all.front().fp.seq == 8 && all.back().fp.seq == 11);
  auto pending = r.snapshot(true);
  CHECK(pending.size() == 1 && pending[0].id == open && pending[0].state == FlightState::kQueued);
  // Op 7's slot now holds op 11: a late update of 7 must not touch it.
  r.finished(7, true);
  CHECK(r.snapshot(true).size() == 1);
}

void off_records_nothing() {
  FlightRecorder r(0);
  CHECK(r.record(allreduce(1), FlightTransport::kGloo, true) == 0);
  r.started(0);
  r.finished(0, false);
  CHECK(r.snapshot(false).empty());
}

void reads_while_written() {
  // A reader beside a writer sees whole entries: every fingerprint it reads is one that was written.
  FlightRecorder r(16);
  std::thread writer([&] {
    for (uint64_t s = 1; s <= 200000; s++) {
      Fingerprint fp = allreduce(s);
      fp.numel = s * 3;
      r.finished(r.record(fp, FlightTransport::kGloo, true), false);
    }
  });
  int torn = 0;
  for (int i = 0; i < 2000; i++) {
    for (const auto& e : r.snapshot(false)) {
      if (e.fp.numel != e.fp.seq * 3 || e.id != e.fp.seq) torn++;
    }
  }
  writer.join();
  CHECK(torn == 0);
}

void capacity_from_the_environment() {
  unsetenv("DDP4J_FLIGHT_RECORDER_ENTRIES");
  CHECK(FlightRecorder::capacity_from_environment() == FlightRecorder::kDefaultEntries);
  setenv("DDP4J_FLIGHT_RECORDER_ENTRIES", " 0 ", 1);
  CHECK(FlightRecorder::capacity_from_environment() == 0);
  setenv("DDP4J_FLIGHT_RECORDER_ENTRIES", "500", 1);
  CHECK(FlightRecorder::capacity_from_environment() == 500);
  for (const char* bad : {"-1", "12x", "lots", "99999999999"}) {
    setenv("DDP4J_FLIGHT_RECORDER_ENTRIES", bad, 1);
    bool threw = false;
    try {
      FlightRecorder::capacity_from_environment();
    } catch (const Error& e) {
      threw = e.kind() == ErrorKind::InvalidArgument &&
              std::string(e.what()).find("DDP4J_FLIGHT_RECORDER_ENTRIES") != std::string::npos;
    }
    CHECK(threw);
  }
  unsetenv("DDP4J_FLIGHT_RECORDER_ENTRIES");
}

}  // namespace

int main() {
  states_and_times();
  wraps_around_keeping_the_newest();
  off_records_nothing();
  reads_while_written();
  capacity_from_the_environment();
  return test_failures();
}
