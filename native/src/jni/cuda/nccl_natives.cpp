// JNI for org.ddp4j.internal.NcclNatives: what only the NCCL backend has (its library, unique ids,
// PCI bus ids) and creating a group. Compiled into libddp4j_cuda.so. The group's collectives, works
// and destruction go through ProcessGroupNatives / WorkNatives in libddp4j.so, which reach the
// NCCL code through ProcessGroup's and Work's virtuals (process_group_handles.h).
#include <jni.h>

#include "org_ddp4j_internal_NcclNatives.h"  // javac -h: the prototypes defined here

#include <chrono>

#include "cuda/cuda_context.h"
#include "cuda/nccl/nccl_loader.h"
#include "cuda/nccl/nccl_process_group.h"
#include "ddp4j/process_group.h"
#include "jni/jni_util.h"
#include "jni/process_group_handles.h"

using namespace ddp4j;
using namespace ddp4j::jni;

extern "C" {

JNIEXPORT jint JNICALL Java_org_ddp4j_internal_NcclNatives_version(JNIEnv* env, jclass) {
  return guarded(env, [&]() -> jint { return nccl::api().version; });
}

JNIEXPORT jstring JNICALL Java_org_ddp4j_internal_NcclNatives_libraryPath(JNIEnv* env, jclass) {
  return guarded(env, [&]() -> jstring { return env->NewStringUTF(nccl::api().path.c_str()); });
}

JNIEXPORT jbyteArray JNICALL Java_org_ddp4j_internal_NcclNatives_uniqueId(JNIEnv* env, jclass) {
  return guarded(env, [&]() -> jbyteArray {
    nccl::UniqueId id = ProcessGroupNccl::create_unique_id();
    jbyteArray out = env->NewByteArray(static_cast<jsize>(sizeof(id)));
    DDP4J_CHECK(out != nullptr, OutOfMemory, "cannot allocate a Java byte[]");
    env->SetByteArrayRegion(out, 0, static_cast<jsize>(sizeof(id)), reinterpret_cast<const jbyte*>(id.internal));
    return out;
  });
}

JNIEXPORT jstring JNICALL Java_org_ddp4j_internal_NcclNatives_pciBusId(JNIEnv* env, jclass, jint device) {
  return guarded(env, [&]() -> jstring {
    cuda::check_device_index(device);
    return env->NewStringUTF(cuda_pci_bus_id(device).c_str());
  });
}

JNIEXPORT jlong JNICALL Java_org_ddp4j_internal_NcclNatives_create(JNIEnv* env, jclass, jbyteArray uniqueId,
                                                                   jint rank, jint size, jint device,
                                                                   jlong timeoutMs) {
  return guarded(env, [&]() -> jlong {
    DDP4J_CHECK_ARG(uniqueId != nullptr && env->GetArrayLength(uniqueId) == static_cast<jsize>(nccl::kUniqueIdBytes),
                    "the NCCL unique id must have ", nccl::kUniqueIdBytes, " bytes");
    DDP4J_CHECK_ARG(timeoutMs > 0, "process group timeout must be positive, got ", timeoutMs, " ms");
    nccl::UniqueId id;
    env->GetByteArrayRegion(uniqueId, 0, static_cast<jsize>(sizeof(id)), reinterpret_cast<jbyte*>(id.internal));
    NcclOptions options;
    options.timeout = std::chrono::milliseconds(timeoutMs);
    return group_handle(new ProcessGroupNccl(id, rank, size, device, options));
  });
}

}  // extern "C"
