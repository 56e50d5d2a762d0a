// JNI for org.ddp4j.internal.ReduceNatives: the reduce ops (src/core/ops_reduce.cpp).
#include <jni.h>

#include "org_ddp4j_internal_ReduceNatives.h"  // javac -h: the prototypes defined here

#include "ddp4j/ops.h"
#include "jni/jni_util.h"

using namespace ddp4j;
using namespace ddp4j::jni;

extern "C" {

JNIEXPORT jlong JNICALL Java_org_ddp4j_internal_ReduceNatives_sumDims(JNIEnv* env, jclass, jlong x, jlongArray dims, jboolean keepdim, jboolean mean, jlongArray results) {
  return guarded(env, [&] { return result_of(env, results, ops::sum_dims(required_tensor_of(x), shape_of(env, dims), keepdim == JNI_TRUE, mean == JNI_TRUE)); });
}

JNIEXPORT void JNICALL Java_org_ddp4j_internal_ReduceNatives_maxDim(JNIEnv* env, jclass, jlong x, jint dim, jboolean keepdim, jlongArray results) {
  guarded(env, [&] { results_of(env, results, ops::max_dim(required_tensor_of(x), dim, keepdim == JNI_TRUE)); });
}

JNIEXPORT jlong JNICALL Java_org_ddp4j_internal_ReduceNatives_softmax(JNIEnv* env, jclass, jlong x, jint dim, jboolean log, jlongArray results) {
  return guarded(env, [&] { return result_of(env, results, ops::softmax(required_tensor_of(x), dim, log == JNI_TRUE)); });
}

JNIEXPORT jlong JNICALL Java_org_ddp4j_internal_ReduceNatives_softmaxBackward(JNIEnv* env, jclass, jlong gy, jlong y, jint dim, jboolean log, jlongArray results) {
  return guarded(env, [&] { return result_of(env, results, ops::softmax_backward(required_tensor_of(gy), required_tensor_of(y), dim, log == JNI_TRUE)); });
}

}  // extern "C"
