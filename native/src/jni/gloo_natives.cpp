// JNI for org.ddp4j.internal.GlooNatives: Gloo process groups and their Work handles.
// A group handle is a heap GlooProcessGroup*; a work handle is a heap std::shared_ptr<Work>*.
#include <jni.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "comm/gloo_process_group.h"
#include "comm/java_store.h"
#include "ddp4j/process_group.h"
#include "jni/jni_util.h"

using namespace ddp4j;
using namespace ddp4j::jni;

namespace {

GlooProcessGroup& group_of(jlong handle) {
  DDP4J_CHECK(handle != 0, IllegalState, "the process group is closed");
  return *reinterpret_cast<GlooProcessGroup*>(handle);
}

std::shared_ptr<Work>& work_of(jlong handle) {
  DDP4J_CHECK(handle != 0, IllegalState, "the Work has been freed");
  return *reinterpret_cast<std::shared_ptr<Work>*>(handle);
}

jlong work_handle(std::shared_ptr<Work> work) { return reinterpret_cast<jlong>(new std::shared_ptr<Work>(std::move(work))); }

std::string string_of(JNIEnv* env, jstring s) {
  if (s == nullptr) return std::string();
  const char* chars = env->GetStringUTFChars(s, nullptr);
  DDP4J_CHECK(chars != nullptr, OutOfMemory, "cannot read a Java string");
  std::string out(chars);
  env->ReleaseStringUTFChars(s, chars);
  return out;
}

/** DDP4J_GLOO_CHECK_COLLECTIVES=0 turns the per-collective header check off (see GlooOptions). */
bool check_collectives_from_env() {
  const char* v = std::getenv("DDP4J_GLOO_CHECK_COLLECTIVES");
  return v == nullptr || !(std::strcmp(v, "0") == 0 || std::strcmp(v, "false") == 0);
}

}  // namespace

extern "C" {

JNIEXPORT jlong JNICALL Java_org_ddp4j_internal_GlooNatives_create(JNIEnv* env, jclass, jobject store, jint rank,
                                                                   jint size, jlong timeoutMs, jstring hostname) {
  return guarded(env, [&]() -> jlong {
    DDP4J_CHECK_ARG(timeoutMs > 0, "process group timeout must be positive, got ", timeoutMs, " ms");
    JavaStore java_store(env, store);
    GlooOptions options;
    options.timeout = std::chrono::milliseconds(timeoutMs);
    options.hostname = string_of(env, hostname);
    if (options.hostname.empty()) {
      const char* iface = std::getenv("GLOO_SOCKET_IFNAME");
      if (iface != nullptr) options.iface = iface;
    }
    options.check_collectives = check_collectives_from_env();
    if (const char* v = std::getenv("DDP4J_GLOO_SMALL_ALLREDUCE_BYTES")) {  // 0 turns the small all-reduce off
      options.small_allreduce_bytes = static_cast<size_t>(std::strtoull(v, nullptr, 10));
    }
    if (const char* v = std::getenv("DDP4J_GLOO_SMALL_SYNC")) options.small_allreduce_sync_reads = std::strcmp(v, "0") != 0;
    return reinterpret_cast<jlong>(new GlooProcessGroup(java_store, rank, size, options));
  });
}

JNIEXPORT jlong JNICALL Java_org_ddp4j_internal_GlooNatives_allReduce(JNIEnv* env, jclass, jlong pg, jlong tensor,
                                                                      jint op) {
  return guarded(env, [&] {
    DDP4J_CHECK_ARG(op >= 0 && op < kNumReduceOps, "allReduce: unknown ReduceOp ", op);
    return work_handle(group_of(pg).allreduce(mutable_tensor_of(tensor), static_cast<ReduceOp>(op)));
  });
}

// 0 when the op already finished (it ran inline): saves the Work handle and its JNI calls.
JNIEXPORT jlong JNICALL Java_org_ddp4j_internal_GlooNatives_allReduceUnchecked(JNIEnv* env, jclass, jlong pg,
                                                                               jlong tensor, jint op,
                                                                               jboolean runInline) {
  return guarded(env, [&]() -> jlong {
    DDP4J_CHECK_ARG(op >= 0 && op < kNumReduceOps, "allReduce: unknown ReduceOp ", op);
    auto work = group_of(pg).allreduce_unchecked(mutable_tensor_of(tensor), static_cast<ReduceOp>(op), runInline);
    if (work->is_completed()) {
      work->wait();  // rethrows its error
      return 0;
    }
    return work_handle(std::move(work));
  });
}

JNIEXPORT jlong JNICALL Java_org_ddp4j_internal_GlooNatives_broadcast(JNIEnv* env, jclass, jlong pg, jlong tensor,
                                                                      jint root) {
  return guarded(env, [&] { return work_handle(group_of(pg).broadcast(mutable_tensor_of(tensor), root)); });
}

JNIEXPORT jlong JNICALL Java_org_ddp4j_internal_GlooNatives_allGather(JNIEnv* env, jclass, jlong pg, jlong output,
                                                                      jlong input) {
  return guarded(env, [&] {
    return work_handle(group_of(pg).allgather(mutable_tensor_of(output), mutable_tensor_of(input)));
  });
}

JNIEXPORT jlong JNICALL Java_org_ddp4j_internal_GlooNatives_allGatherList(JNIEnv* env, jclass, jlong pg,
                                                                          jlongArray outputs, jlong input) {
  return guarded(env, [&] {
    return work_handle(group_of(pg).allgather(tensors_of(env, outputs), mutable_tensor_of(input)));
  });
}

JNIEXPORT jlong JNICALL Java_org_ddp4j_internal_GlooNatives_barrier(JNIEnv* env, jclass, jlong pg) {
  return guarded(env, [&] { return work_handle(group_of(pg).barrier()); });
}

JNIEXPORT void JNICALL Java_org_ddp4j_internal_GlooNatives_workWait(JNIEnv* env, jclass, jlong work,
                                                                    jlong timeoutMs) {
  guarded(env, [&] { work_of(work)->wait(std::chrono::milliseconds(timeoutMs)); });
}

JNIEXPORT jboolean JNICALL Java_org_ddp4j_internal_GlooNatives_workIsCompleted(JNIEnv* env, jclass, jlong work) {
  return guarded(env, [&] { return static_cast<jboolean>(work_of(work)->is_completed()); });
}

JNIEXPORT jstring JNICALL Java_org_ddp4j_internal_GlooNatives_workDescription(JNIEnv* env, jclass, jlong work) {
  return guarded(env, [&] { return env->NewStringUTF(work_of(work)->description().c_str()); });
}

JNIEXPORT void JNICALL Java_org_ddp4j_internal_GlooNatives_workFree(JNIEnv*, jclass, jlong work) {
  delete reinterpret_cast<std::shared_ptr<Work>*>(work);
}

JNIEXPORT void JNICALL Java_org_ddp4j_internal_GlooNatives_destroy(JNIEnv* env, jclass, jlong pg) {
  guarded(env, [&] { delete reinterpret_cast<GlooProcessGroup*>(pg); });
}

}  // extern "C"
