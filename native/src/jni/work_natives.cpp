// JNI for org.ddp4j.internal.WorkNatives: the Work handles of every backend (process_group_handles.h).
// Virtual dispatch picks the backend's wait: a Gloo Work blocks on the host, an NCCL Work (defined
// in libddp4j_cuda.so) polls its CUDA event or orders the compute stream.
#include <jni.h>

#include "org_ddp4j_internal_WorkNatives.h"  // javac -h: the prototypes defined here

#include <chrono>
#include <memory>

#include "ddp4j/process_group.h"
#include "jni/jni_util.h"
#include "jni/process_group_handles.h"

using namespace ddp4j;
using namespace ddp4j::jni;

extern "C" {

// Returns whether the work has finished; when it has, its error is thrown here, in the same call,
// so that the common path of a successful wait crosses JNI once.
JNIEXPORT jboolean JNICALL Java_org_ddp4j_internal_WorkNatives_synchronize(JNIEnv* env, jclass, jlong work) {
  return guarded(env, [&]() -> jboolean {
    Work& w = work_of(work);
    w.synchronize();
    if (!w.is_completed()) return JNI_FALSE;  // the compute stream waits for it; the host did not
    w.wait();                                 // finished: returns at once or rethrows its error
    return JNI_TRUE;
  });
}

JNIEXPORT void JNICALL Java_org_ddp4j_internal_WorkNatives_await(JNIEnv* env, jclass, jlong work, jlong timeoutMs) {
  guarded(env, [&] { work_of(work).wait(std::chrono::milliseconds(timeoutMs)); });
}

JNIEXPORT jboolean JNICALL Java_org_ddp4j_internal_WorkNatives_isCompleted(JNIEnv* env, jclass, jlong work) {
  return guarded(env, [&] { return static_cast<jboolean>(work_of(work).is_completed()); });
}

JNIEXPORT jstring JNICALL Java_org_ddp4j_internal_WorkNatives_description(JNIEnv* env, jclass, jlong work) {
  return guarded(env, [&] { return env->NewStringUTF(work_of(work).description().c_str()); });
}

// No guarded(): deleting a shared_ptr does not throw. An NCCL work keeps its tensors until the GPU
// is past them, whenever this drops the last reference.
JNIEXPORT void JNICALL Java_org_ddp4j_internal_WorkNatives_free(JNIEnv*, jclass, jlong work) {
  delete reinterpret_cast<std::shared_ptr<Work>*>(work);
}

}  // extern "C"
