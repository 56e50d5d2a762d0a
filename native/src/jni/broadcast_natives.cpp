// JNI for org.ddp4j.internal.BroadcastNatives: the broadcast ops (src/core/ops_broadcast.cpp).
#include <jni.h>

#include "org_ddp4j_internal_BroadcastNatives.h"  // javac -h: the prototypes defined here

#include "ddp4j/ops.h"
#include "jni/jni_util.h"

using namespace ddp4j;
using namespace ddp4j::jni;

extern "C" {

JNIEXPORT jlong JNICALL Java_org_ddp4j_internal_BroadcastNatives_binary(JNIEnv* env, jclass, jlong a, jlong b, jint op, jlongArray results) {
  return guarded(env, [&] { return result_of(env, results, ops::broadcast_binary(required_tensor_of(a), required_tensor_of(b), static_cast<kernels::BinaryOp>(op))); });
}

JNIEXPORT jlong JNICALL Java_org_ddp4j_internal_BroadcastNatives_where(JNIEnv* env, jclass, jlong condition, jlong a, jlong b, jlongArray results) {
  return guarded(env, [&] { return result_of(env, results, ops::where(required_tensor_of(condition), required_tensor_of(a), required_tensor_of(b))); });
}

JNIEXPORT jlong JNICALL Java_org_ddp4j_internal_BroadcastNatives_maskedFill(JNIEnv* env, jclass, jlong x, jlong mask, jdouble value, jlongArray results) {
  return guarded(env, [&] { return result_of(env, results, ops::masked_fill(required_tensor_of(x), required_tensor_of(mask), value)); });
}

}  // extern "C"
