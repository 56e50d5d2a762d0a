// JNI for org.ddp4j.internal.GlooNatives: creating a Gloo process group. Its collectives, works and
// destruction go through ProcessGroupNatives / WorkNatives (process_group_handles.h).
#include <jni.h>

#include "org_ddp4j_internal_GlooNatives.h"  // javac -h: the prototypes defined here

#include <chrono>
#include <cstddef>
#include <string>

#include "comm/gloo/process_group.h"
#include "jni/java_store.h"
#include "jni/jni_util.h"
#include "jni/process_group_handles.h"

using namespace ddp4j;
using namespace ddp4j::jni;

namespace {

/** A String field of the options; null reads as "" (unset). */
std::string string_field(JNIEnv* env, jobject options, jclass cls, const names::Member& field) {
  auto value = static_cast<jstring>(env->GetObjectField(options, field_id(env, cls, field)));
  std::string out = string_of(env, value, field.name);
  env->DeleteLocalRef(value);
  return out;
}

/** The native options from an org.ddp4j.internal.GlooGroupOptions (field names in java_names.h). */
GlooOptions gloo_options_of(JNIEnv* env, jobject options) {
  DDP4J_CHECK_ARG(options != nullptr, "the Gloo group options are null");
  jclass cls = find_class(env, names::kGlooGroupOptions);
  const jlong timeout_ms = env->GetLongField(options, field_id(env, cls, names::kGlooTimeoutMs));
  DDP4J_CHECK_ARG(timeout_ms > 0, "process group timeout must be positive, got ", timeout_ms, " ms");
  GlooOptions out;
  out.timeout = std::chrono::milliseconds(timeout_ms);
  out.hostname = string_field(env, options, cls, names::kGlooHostname);
  if (out.hostname.empty()) out.iface = string_field(env, options, cls, names::kGlooSocketIfname);
  out.check_collectives = env->GetBooleanField(options, field_id(env, cls, names::kGlooCheckCollectives));
  out.small_allreduce_bytes =
      static_cast<size_t>(env->GetLongField(options, field_id(env, cls, names::kGlooSmallAllReduceBytes)));
  out.small_allreduce_sync_reads =
      env->GetBooleanField(options, field_id(env, cls, names::kGlooSmallAllReduceSyncReads));
  out.shm = env->GetBooleanField(options, field_id(env, cls, names::kGlooShm));
  out.shm_host_id = string_field(env, options, cls, names::kGlooShmHostId);
  env->DeleteLocalRef(cls);
  return out;
}

}  // namespace

extern "C" {

JNIEXPORT jlong JNICALL Java_org_ddp4j_internal_GlooNatives_create(JNIEnv* env, jclass, jobject store,
                                                                   jobject records, jint rank, jint size,
                                                                   jobject options) {
  return guarded(env, [&]() -> jlong {
    const GlooOptions gloo_options = gloo_options_of(env, options);
    JavaStore java_store(env, store);
    std::shared_ptr<JavaStore> lost_peers = records != nullptr ? std::make_shared<JavaStore>(env, records) : nullptr;
    return group_handle(new ProcessGroupGloo(java_store, rank, size, gloo_options, lost_peers));
  });
}

JNIEXPORT jstring JNICALL Java_org_ddp4j_internal_GlooNatives_transport(JNIEnv* env, jclass, jlong handle) {
  return guarded(env, [&]() -> jstring {
    auto* gloo = dynamic_cast<ProcessGroupGloo*>(&group_of(handle));
    DDP4J_CHECK(gloo != nullptr, IllegalState, "not a Gloo process group");
    return env->NewStringUTF(gloo->transport().c_str());
  });
}

}  // extern "C"
