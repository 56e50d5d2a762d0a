// JNI for org.ddp4j.internal.ProcessGroupNatives: the collectives and destruction of every
// backend's group (process_group_handles.h). GlooNatives and NcclNatives only create groups.
#include <jni.h>

#include "org_ddp4j_internal_ProcessGroupNatives.h"  // javac -h: the prototypes defined here

#include <chrono>
#include <memory>
#include <vector>

#include "comm/fingerprint.h"
#include "comm/flight_record_layout.h"
#include "comm/flight_recorder.h"
#include "ddp4j/process_group.h"
#include "jni/jni_util.h"
#include "jni/process_group_handles.h"

using namespace ddp4j;
using namespace ddp4j::jni;

namespace {

/**
 * The handle of a work just returned by a collective, or 0 when it already finished successfully
 * (it ran on the calling thread, e.g. a small shared-memory op): Java then uses a completed Work,
 * which saves the handle, its Cleaner and two JNI calls. A failed work keeps its handle, so the
 * error surfaces at await as for any other.
 */
jlong handle_unless_done(std::shared_ptr<Work> work) {
  if (work->is_completed() && !work->error()) return 0;
  return work_handle(std::move(work));
}

ReduceOp reduce_op_of(jint op) {
  DDP4J_CHECK_ARG(op >= 0 && op < kNumReduceOps, "unknown ReduceOp ", op);
  return static_cast<ReduceOp>(op);
}

}  // namespace

extern "C" {

JNIEXPORT jlong JNICALL Java_org_ddp4j_internal_ProcessGroupNatives_allReduce(JNIEnv* env, jclass, jlong pg,
                                                                              jlong tensor, jint op) {
  return guarded(env, [&] { return handle_unless_done(group_of(pg).allreduce(mutable_tensor_of(tensor), reduce_op_of(op))); });
}

// 0 when the op already finished successfully (it ran inline); a failure surfaces at await, as for
// every collective, so DDP's end-of-backward wait sees it and resets its buckets.
JNIEXPORT jlong JNICALL Java_org_ddp4j_internal_ProcessGroupNatives_allReduceBucket(JNIEnv* env, jclass, jlong pg,
                                                                                    jlong tensor, jint op,
                                                                                    jboolean runInline, jint bucket,
                                                                                    jint buckets) {
  return guarded(env, [&] {
    return handle_unless_done(
        group_of(pg).allreduce_bucket(mutable_tensor_of(tensor), reduce_op_of(op), runInline, bucket, buckets));
  });
}

JNIEXPORT jlong JNICALL Java_org_ddp4j_internal_ProcessGroupNatives_broadcast(JNIEnv* env, jclass, jlong pg,
                                                                              jlong tensor, jint root) {
  return guarded(env, [&] { return handle_unless_done(group_of(pg).broadcast(mutable_tensor_of(tensor), root)); });
}

JNIEXPORT jlong JNICALL Java_org_ddp4j_internal_ProcessGroupNatives_allGatherIntoTensor(JNIEnv* env, jclass, jlong pg,
                                                                                        jlong output, jlong input) {
  return guarded(env, [&] {
    return handle_unless_done(group_of(pg).allgather(mutable_tensor_of(output), mutable_tensor_of(input)));
  });
}

JNIEXPORT jlong JNICALL Java_org_ddp4j_internal_ProcessGroupNatives_allGather(JNIEnv* env, jclass, jlong pg,
                                                                              jlongArray outputs, jlong input) {
  return guarded(env, [&] {
    return handle_unless_done(group_of(pg).allgather(tensors_of(env, outputs), mutable_tensor_of(input)));
  });
}

JNIEXPORT jlong JNICALL Java_org_ddp4j_internal_ProcessGroupNatives_barrier(JNIEnv* env, jclass, jlong pg) {
  return guarded(env, [&] { return handle_unless_done(group_of(pg).barrier()); });
}

JNIEXPORT jlong JNICALL Java_org_ddp4j_internal_ProcessGroupNatives_reduce(JNIEnv* env, jclass, jlong pg, jlong tensor,
                                                                           jint root, jint op) {
  return guarded(env, [&] {
    return handle_unless_done(group_of(pg).reduce(mutable_tensor_of(tensor), root, reduce_op_of(op)));
  });
}

JNIEXPORT jlong JNICALL Java_org_ddp4j_internal_ProcessGroupNatives_reduceScatterTensor(JNIEnv* env, jclass, jlong pg,
                                                                                        jlong output, jlong input,
                                                                                        jint op) {
  return guarded(env, [&] {
    return handle_unless_done(
        group_of(pg).reduce_scatter(mutable_tensor_of(output), mutable_tensor_of(input), reduce_op_of(op)));
  });
}

JNIEXPORT jlong JNICALL Java_org_ddp4j_internal_ProcessGroupNatives_reduceScatter(JNIEnv* env, jclass, jlong pg,
                                                                                  jlong output, jlongArray inputs,
                                                                                  jint op) {
  return guarded(env, [&] {
    return handle_unless_done(
        group_of(pg).reduce_scatter(mutable_tensor_of(output), tensors_of(env, inputs), reduce_op_of(op)));
  });
}

JNIEXPORT jlong JNICALL Java_org_ddp4j_internal_ProcessGroupNatives_send(JNIEnv* env, jclass, jlong pg, jlong tensor,
                                                                         jint dst, jint tag) {
  return guarded(env, [&] { return handle_unless_done(group_of(pg).send(mutable_tensor_of(tensor), dst, tag)); });
}

JNIEXPORT jlong JNICALL Java_org_ddp4j_internal_ProcessGroupNatives_recv(JNIEnv* env, jclass, jlong pg, jlong tensor,
                                                                         jint src, jint tag) {
  return guarded(env, [&] { return handle_unless_done(group_of(pg).recv(mutable_tensor_of(tensor), src, tag)); });
}

// The flight record as one long[] (layout: org.ddp4j.internal.ProcessGroupNatives.flightRecord):
// one JNI array for the whole ring, read at dump time and, with onlyOpen, once a second.
JNIEXPORT jlongArray JNICALL Java_org_ddp4j_internal_ProcessGroupNatives_flightRecord(JNIEnv* env, jclass, jlong pg,
                                                                                     jboolean onlyOpen) {
  return guarded(env, [&]() -> jlongArray {
    namespace L = flight_layout;
    const FlightRecorder* recorder = group_of(pg).flight_recorder();
    std::vector<FlightRecorder::Entry> entries;
    if (recorder != nullptr) entries = recorder->snapshot(onlyOpen);
    std::vector<jlong> out(L::kHeader + L::kFields * entries.size());
    out[L::kHeaderFields] = L::kFields;
    out[L::kHeaderCapacity] = recorder != nullptr ? static_cast<jlong>(recorder->capacity()) : 0;
    out[L::kHeaderLastStarted] = recorder != nullptr ? static_cast<jlong>(recorder->last_started_seq()) : 0;
    out[L::kHeaderSteadyNow] = FlightRecorder::now_ns();
    out[L::kHeaderWallNow] =
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
    for (size_t r = 0; r < entries.size(); r++) {
      const auto& e = entries[r];
      jlong* f = out.data() + L::kHeader + r * L::kFields;
      f[L::kRecordId] = static_cast<jlong>(e.id);
      f[L::kSeq] = static_cast<jlong>(e.fp.seq);
      f[L::kKind] = static_cast<jlong>(e.fp.kind);
      f[L::kArg] = static_cast<jlong>(e.fp.arg);
      f[L::kDtype] = static_cast<jlong>(e.fp.dtype);
      f[L::kNumel] = static_cast<jlong>(e.fp.numel);
      f[L::kBucket] = static_cast<jlong>(e.fp.bucket);
      f[L::kBuckets] = static_cast<jlong>(e.fp.buckets);
      f[L::kPeer] = static_cast<jlong>(e.fp.peer);
      f[L::kTransport] = static_cast<jlong>(e.transport);
      f[L::kState] = static_cast<jlong>(e.state);
      f[L::kQueuedNs] = e.queued_ns;
      f[L::kStartedNs] = e.started_ns;
      f[L::kFinishedNs] = e.finished_ns;
    }
    jlongArray array = env->NewLongArray(static_cast<jsize>(out.size()));
    if (array == nullptr) return nullptr;  // OutOfMemoryError pending
    env->SetLongArrayRegion(array, 0, static_cast<jsize>(out.size()), out.data());
    return array;
  });
}

JNIEXPORT jstring JNICALL Java_org_ddp4j_internal_ProcessGroupNatives_describeCollective(
    JNIEnv* env, jclass, jlong seq, jint kind, jint arg, jint dtype, jlong numel, jint bucket, jint buckets, jint peer) {
  return guarded(env, [&]() -> jstring {
    Fingerprint fp;
    fp.seq = static_cast<uint64_t>(seq);
    fp.kind = static_cast<uint32_t>(kind);
    fp.arg = static_cast<uint32_t>(arg);
    fp.dtype = static_cast<uint32_t>(dtype);
    fp.numel = static_cast<uint64_t>(numel);
    fp.bucket = bucket;
    fp.buckets = buckets;
    fp.peer = static_cast<uint32_t>(peer);
    return env->NewStringUTF(describe(fp).c_str());
  });
}

// The virtual destructor runs the backend's shutdown (Gloo: fail queued ops, join the worker;
// NCCL: drain or abort the communicator).
JNIEXPORT void JNICALL Java_org_ddp4j_internal_ProcessGroupNatives_destroy(JNIEnv* env, jclass, jlong pg) {
  guarded(env, [&] { delete reinterpret_cast<ProcessGroup*>(pg); });
}

}  // extern "C"
