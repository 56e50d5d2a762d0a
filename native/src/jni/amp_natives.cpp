// JNI for org.ddp4j.internal.AmpNatives: GradScaler's unscale-and-check and autocast's CPU kernel
// choice (ops_amp.cpp).
#include <jni.h>

#include <vector>

#include "org_ddp4j_internal_AmpNatives.h"  // javac -h: the prototypes defined here

#include "ddp4j/ops.h"
#include "jni/jni_util.h"

using namespace ddp4j;
using namespace ddp4j::jni;

extern "C" {

JNIEXPORT void JNICALL Java_org_ddp4j_internal_AmpNatives_nonFiniteCheckAndUnscale(JNIEnv* env, jclass,
                                                                                   jlongArray grads,
                                                                                   jfloat invScale, jlong found) {
  guarded(env, [&] {
    const jsize n = env->GetArrayLength(grads);
    std::vector<jlong> handles(static_cast<size_t>(n));
    env->GetLongArrayRegion(grads, 0, n, handles.data());
    Tensor& f = mutable_tensor_of(found);
    for (jlong h : handles) ops::non_finite_check_and_unscale_(mutable_tensor_of(h), invScale, f);
  });
}

JNIEXPORT jstring JNICALL Java_org_ddp4j_internal_AmpNatives_cpuKernel(JNIEnv* env, jclass) {
  return guarded(env, [&]() -> jstring { return env->NewStringUTF(ops::autocast_cpu_kernel()); });
}

JNIEXPORT void JNICALL Java_org_ddp4j_internal_AmpNatives_setCpuKernel(JNIEnv* env, jclass, jstring name) {
  guarded(env, [&] { ops::set_autocast_cpu_kernel(string_of(env, name, "the kernel name").c_str()); });
}

}  // extern "C"
