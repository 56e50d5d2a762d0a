// JNI for org.ddp4j.internal.ElementwiseNatives.
#include <jni.h>

#include "org_ddp4j_internal_ElementwiseNatives.h"  // javac -h: the prototypes defined here

#include "ddp4j/ops.h"
#include "jni/jni_util.h"

using namespace ddp4j;
using namespace ddp4j::jni;

extern "C" {

JNIEXPORT jlong JNICALL Java_org_ddp4j_internal_ElementwiseNatives_add(JNIEnv* env, jclass, jlong a, jlong b,
                                                                       jfloat alpha, jlongArray results) {
  return guarded(env, [&] { return result_of(env, results, ops::add(tensor_of(a), tensor_of(b), alpha)); });
}

JNIEXPORT void JNICALL Java_org_ddp4j_internal_ElementwiseNatives_addInPlace(JNIEnv* env, jclass, jlong a, jlong b,
                                                                             jfloat alpha) {
  guarded(env, [&] { ops::add_(mutable_tensor_of(a), tensor_of(b), alpha); });
}

JNIEXPORT jlong JNICALL Java_org_ddp4j_internal_ElementwiseNatives_mul(JNIEnv* env, jclass, jlong a, jlong b,
                                                                       jlongArray results) {
  return guarded(env, [&] { return result_of(env, results, ops::mul(tensor_of(a), tensor_of(b))); });
}

JNIEXPORT jlong JNICALL Java_org_ddp4j_internal_ElementwiseNatives_scale(JNIEnv* env, jclass, jlong a, jfloat s,
                                                                         jlongArray results) {
  return guarded(env, [&] { return result_of(env, results, ops::scale(tensor_of(a), s)); });
}

JNIEXPORT void JNICALL Java_org_ddp4j_internal_ElementwiseNatives_scaleInPlace(JNIEnv* env, jclass, jlong a,
                                                                               jfloat s) {
  guarded(env, [&] { ops::scale_(mutable_tensor_of(a), s); });
}

JNIEXPORT jlong JNICALL Java_org_ddp4j_internal_ElementwiseNatives_sum(JNIEnv* env, jclass, jlong a,
                                                                       jlongArray results) {
  return guarded(env, [&] { return result_of(env, results, ops::sum(tensor_of(a))); });
}

JNIEXPORT jlong JNICALL Java_org_ddp4j_internal_ElementwiseNatives_argmaxRows(JNIEnv* env, jclass, jlong x,
                                                                              jlongArray results) {
  return guarded(env, [&] { return result_of(env, results, ops::argmax_rows(tensor_of(x))); });
}

}  // extern "C"
