// JNI for org.ddp4j.internal.NcclNatives: NCCL process groups and their Work handles. Compiled
// into libddp4j_cuda.so. A group handle is a heap NcclProcessGroup*; a work handle is a heap
// std::shared_ptr<NcclWork>*.
#include <jni.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <vector>

#include "cuda/cuda_context.h"
#include "cuda/nccl/nccl_loader.h"
#include "cuda/nccl/nccl_process_group.h"
#include "ddp4j/process_group.h"
#include "jni/jni_util.h"

using namespace ddp4j;
using namespace ddp4j::jni;

namespace {

NcclProcessGroup& group_of(jlong handle) {
  DDP4J_CHECK(handle != 0, IllegalState, "the process group is closed");
  return *reinterpret_cast<NcclProcessGroup*>(handle);
}

std::shared_ptr<NcclWork>& work_of(jlong handle) {
  DDP4J_CHECK(handle != 0, IllegalState, "the Work has been freed");
  return *reinterpret_cast<std::shared_ptr<NcclWork>*>(handle);
}

jlong work_handle(const std::shared_ptr<Work>& work) {
  // Every Work of an NcclProcessGroup is an NcclWork.
  return reinterpret_cast<jlong>(new std::shared_ptr<NcclWork>(std::static_pointer_cast<NcclWork>(work)));
}

}  // namespace

extern "C" {

JNIEXPORT jint JNICALL Java_org_ddp4j_internal_NcclNatives_version(JNIEnv* env, jclass) {
  return guarded(env, [&]() -> jint { return nccl::api().version; });
}

JNIEXPORT jstring JNICALL Java_org_ddp4j_internal_NcclNatives_libraryPath(JNIEnv* env, jclass) {
  return guarded(env, [&]() -> jstring { return env->NewStringUTF(nccl::api().path.c_str()); });
}

JNIEXPORT jbyteArray JNICALL Java_org_ddp4j_internal_NcclNatives_uniqueId(JNIEnv* env, jclass) {
  return guarded(env, [&]() -> jbyteArray {
    nccl::UniqueId id = NcclProcessGroup::create_unique_id();
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
    return reinterpret_cast<jlong>(new NcclProcessGroup(id, rank, size, device, options));
  });
}

JNIEXPORT jlong JNICALL Java_org_ddp4j_internal_NcclNatives_allReduce(JNIEnv* env, jclass, jlong pg, jlong tensor,
                                                                      jint op) {
  return guarded(env, [&] {
    DDP4J_CHECK_ARG(op >= 0 && op < kNumReduceOps, "allReduce: unknown ReduceOp ", op);
    return work_handle(group_of(pg).allreduce(mutable_tensor_of(tensor), static_cast<ReduceOp>(op)));
  });
}

JNIEXPORT jlong JNICALL Java_org_ddp4j_internal_NcclNatives_broadcast(JNIEnv* env, jclass, jlong pg, jlong tensor,
                                                                      jint root) {
  return guarded(env, [&] { return work_handle(group_of(pg).broadcast(mutable_tensor_of(tensor), root)); });
}

JNIEXPORT jlong JNICALL Java_org_ddp4j_internal_NcclNatives_allGather(JNIEnv* env, jclass, jlong pg, jlong output,
                                                                      jlong input) {
  return guarded(env, [&] {
    return work_handle(group_of(pg).allgather(mutable_tensor_of(output), mutable_tensor_of(input)));
  });
}

JNIEXPORT jlong JNICALL Java_org_ddp4j_internal_NcclNatives_allGatherList(JNIEnv* env, jclass, jlong pg,
                                                                          jlongArray outputs, jlong input) {
  return guarded(env, [&] {
    return work_handle(group_of(pg).allgather(tensors_of(env, outputs), mutable_tensor_of(input)));
  });
}

JNIEXPORT jlong JNICALL Java_org_ddp4j_internal_NcclNatives_barrier(JNIEnv* env, jclass, jlong pg) {
  return guarded(env, [&] { return work_handle(group_of(pg).barrier()); });
}

JNIEXPORT void JNICALL Java_org_ddp4j_internal_NcclNatives_workSynchronize(JNIEnv* env, jclass, jlong work) {
  guarded(env, [&] { work_of(work)->synchronize(); });
}

JNIEXPORT void JNICALL Java_org_ddp4j_internal_NcclNatives_workWait(JNIEnv* env, jclass, jlong work,
                                                                    jlong timeoutMs) {
  guarded(env, [&] { work_of(work)->wait_blocking(std::chrono::milliseconds(timeoutMs)); });
}

JNIEXPORT jboolean JNICALL Java_org_ddp4j_internal_NcclNatives_workIsCompleted(JNIEnv* env, jclass, jlong work) {
  return guarded(env, [&]() -> jboolean {
    return static_cast<jboolean>(work_of(work)->query());
  });
}

JNIEXPORT jstring JNICALL Java_org_ddp4j_internal_NcclNatives_workDescription(JNIEnv* env, jclass, jlong work) {
  return guarded(env, [&] { return env->NewStringUTF(work_of(work)->description().c_str()); });
}

JNIEXPORT void JNICALL Java_org_ddp4j_internal_NcclNatives_workFree(JNIEnv*, jclass, jlong work) {
  delete reinterpret_cast<std::shared_ptr<NcclWork>*>(work);
}

JNIEXPORT void JNICALL Java_org_ddp4j_internal_NcclNatives_destroy(JNIEnv* env, jclass, jlong pg) {
  guarded(env, [&] { delete reinterpret_cast<NcclProcessGroup*>(pg); });
}

}  // extern "C"
