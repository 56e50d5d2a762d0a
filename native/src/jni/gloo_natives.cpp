// JNI for org.ddp4j.internal.GlooNatives: creating a Gloo process group. Its collectives, works and
// destruction go through ProcessGroupNatives / WorkNatives (process_group_handles.h).
#include <jni.h>

#include <chrono>
#include <string>

#include "comm/gloo/process_group.h"
#include "jni/java_store.h"
#include "jni/jni_util.h"
#include "jni/process_group_handles.h"

using namespace ddp4j;
using namespace ddp4j::jni;

namespace {

std::string string_of(JNIEnv* env, jstring s) {
  if (s == nullptr) return std::string();
  const char* chars = env->GetStringUTFChars(s, nullptr);
  DDP4J_CHECK(chars != nullptr, OutOfMemory, "cannot read a Java string");
  std::string out(chars);
  env->ReleaseStringUTFChars(s, chars);
  return out;
}

}  // namespace

extern "C" {

JNIEXPORT jlong JNICALL Java_org_ddp4j_internal_GlooNatives_create(JNIEnv* env, jclass, jobject store, jint rank,
                                                                   jint size, jlong timeoutMs, jstring hostname,
                                                                   jstring socketIfname, jboolean checkCollectives,
                                                                   jlong smallAllReduceBytes,
                                                                   jboolean smallAllReduceSyncReads, jboolean shm,
                                                                   jstring shmHostId) {
  return guarded(env, [&]() -> jlong {
    DDP4J_CHECK_ARG(timeoutMs > 0, "process group timeout must be positive, got ", timeoutMs, " ms");
    JavaStore java_store(env, store);
    GlooOptions options;
    options.timeout = std::chrono::milliseconds(timeoutMs);
    options.hostname = string_of(env, hostname);
    if (options.hostname.empty()) options.iface = string_of(env, socketIfname);
    options.check_collectives = checkCollectives;
    options.small_allreduce_bytes = static_cast<size_t>(smallAllReduceBytes);
    options.small_allreduce_sync_reads = smallAllReduceSyncReads;
    options.shm = shm;
    options.shm_host_id = string_of(env, shmHostId);
    return group_handle(new GlooProcessGroup(java_store, rank, size, options));
  });
}

JNIEXPORT jstring JNICALL Java_org_ddp4j_internal_GlooNatives_transport(JNIEnv* env, jclass, jlong handle) {
  return guarded(env, [&]() -> jstring {
    auto* gloo = dynamic_cast<GlooProcessGroup*>(&group_of(handle));
    DDP4J_CHECK(gloo != nullptr, IllegalState, "not a Gloo process group");
    return env->NewStringUTF(gloo->transport().c_str());
  });
}

}  // extern "C"
