// JNI for org.ddp4j.internal.UnaryNatives: the unary ops (src/core/ops_unary.cpp).
#include <jni.h>

#include "org_ddp4j_internal_UnaryNatives.h"  // javac -h: the prototypes defined here

#include "ddp4j/ops.h"
#include "jni/jni_util.h"

using namespace ddp4j;
using namespace ddp4j::jni;

extern "C" {

JNIEXPORT jlong JNICALL Java_org_ddp4j_internal_UnaryNatives_unary(JNIEnv* env, jclass, jlong x, jint op, jdouble scalar, jlongArray results) {
  return guarded(env, [&] { return result_of(env, results, ops::unary(required_tensor_of(x), static_cast<kernels::UnaryOp>(op), scalar)); });
}

}  // extern "C"
