// flight_record_layout.h: the layout of the long[] a group's flight record crosses JNI in
// (org.ddp4j.internal.ProcessGroupNatives.flightRecord), one name per position. Java's
// org.ddp4j.internal.FlightRecordLayout holds the same names and numbers; FlightRecordLayoutTest
// reads this file and fails when the two differ.
#pragma once

namespace ddp4j::flight_layout {

// The header, ahead of the records.
inline constexpr int kHeader = 5;
inline constexpr int kHeaderFields = 0;       // fields per record (kFields)
inline constexpr int kHeaderCapacity = 1;     // the ring's capacity; 0: the recorder is off
inline constexpr int kHeaderLastStarted = 2;  // the highest collective number that started
inline constexpr int kHeaderSteadyNow = 3;    // the steady clock now, ns
inline constexpr int kHeaderWallNow = 4;      // the wall clock now, ns since the epoch

// Each record: an op's fingerprint (fingerprint.h), where it ran and how far it got.
inline constexpr int kFields = 14;
inline constexpr int kRecordId = 0;
inline constexpr int kSeq = 1;
inline constexpr int kKind = 2;  // Fingerprint::Kind
inline constexpr int kArg = 3;
inline constexpr int kDtype = 4;
inline constexpr int kNumel = 5;
inline constexpr int kBucket = 6;
inline constexpr int kBuckets = 7;
inline constexpr int kPeer = 8;
inline constexpr int kTransport = 9;  // FlightTransport
inline constexpr int kState = 10;     // FlightState
inline constexpr int kQueuedNs = 11;  // steady clock; 0 until reached
inline constexpr int kStartedNs = 12;
inline constexpr int kFinishedNs = 13;

}  // namespace ddp4j::flight_layout
