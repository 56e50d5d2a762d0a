// JNI for org.ddp4j.internal.LinearNatives: linear, addmm and ReLU forward and backward (ops_linear.cpp).
#include <jni.h>

#include "org_ddp4j_internal_LinearNatives.h"  // javac -h: the prototypes defined here

#include "ddp4j/ops.h"
#include "jni/jni_util.h"

using namespace ddp4j;
using namespace ddp4j::jni;

namespace {
DType dtype_of_code(jint code) {
  DDP4J_CHECK_ARG(code >= 0 && code < kNumDTypes, "linear: no dtype has code ", code);
  return static_cast<DType>(code);
}
}  // namespace

extern "C" {

JNIEXPORT jlong JNICALL Java_org_ddp4j_internal_LinearNatives_linearForward(JNIEnv* env, jclass, jlong x, jlong w,
                                                                          jlong b, jint compute, jlongArray results) {
  return guarded(env, [&] { return result_of(env, results,
      ops::linear_forward(tensor_of(x), tensor_of(w), tensor_of(b), dtype_of_code(compute))); });
}

JNIEXPORT void JNICALL Java_org_ddp4j_internal_LinearNatives_linearBackward(JNIEnv* env, jclass, jlong gy,
                                                                                jlong x, jlong w, jboolean needGx,
                                                                                jboolean hasBias, jint compute,
                                                                                jlongArray results) {
  guarded(env, [&] {
    results_of(env, results, ops::linear_backward(tensor_of(gy), tensor_of(x), tensor_of(w), needGx, hasBias,
                                                  dtype_of_code(compute)));
  });
}

JNIEXPORT jlong JNICALL Java_org_ddp4j_internal_LinearNatives_addmmForward(JNIEnv* env, jclass, jlong b, jlong x,
                                                                           jlong w, jint compute,
                                                                           jlongArray results) {
  return guarded(env, [&] { return result_of(env, results,
      ops::addmm_forward(tensor_of(b), tensor_of(x), tensor_of(w), dtype_of_code(compute))); });
}

JNIEXPORT void JNICALL Java_org_ddp4j_internal_LinearNatives_addmmBackward(JNIEnv* env, jclass, jlong gy, jlong x,
                                                                           jlong w, jboolean needGx,
                                                                           jboolean hasBias, jint compute,
                                                                           jlongArray results) {
  guarded(env, [&] {
    results_of(env, results, ops::addmm_backward(tensor_of(gy), tensor_of(x), tensor_of(w), needGx, hasBias,
                                                 dtype_of_code(compute)));
  });
}

JNIEXPORT jlong JNICALL Java_org_ddp4j_internal_LinearNatives_reluForward(JNIEnv* env, jclass, jlong x,
                                                                          jlongArray results) {
  return guarded(env, [&] { return result_of(env, results, ops::relu_forward(tensor_of(x))); });
}

JNIEXPORT jlong JNICALL Java_org_ddp4j_internal_LinearNatives_reluBackward(JNIEnv* env, jclass, jlong gy, jlong y,
                                                                           jlongArray results) {
  return guarded(env, [&] { return result_of(env, results, ops::relu_backward(tensor_of(gy), tensor_of(y))); });
}

}  // extern "C"
