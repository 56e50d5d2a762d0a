// JNI for org.ddp4j.internal.MatmulNatives: the matmul ops (src/core/ops_matmul.cpp).
#include <jni.h>

#include "org_ddp4j_internal_MatmulNatives.h"  // javac -h: the prototypes defined here

#include "ddp4j/ops.h"
#include "jni/jni_util.h"

using namespace ddp4j;
using namespace ddp4j::jni;

extern "C" {

JNIEXPORT jlong JNICALL Java_org_ddp4j_internal_MatmulNatives_matmul(JNIEnv* env, jclass, jlong a, jlong b, jboolean transA, jboolean transB, jlongArray results) {
  return guarded(env, [&] { return result_of(env, results, ops::matmul(required_tensor_of(a), required_tensor_of(b), transA == JNI_TRUE, transB == JNI_TRUE)); });
}

}  // extern "C"
