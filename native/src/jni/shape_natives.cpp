// JNI for org.ddp4j.internal.ShapeNatives: the shape ops (src/core/ops_shape.cpp).
#include <jni.h>

#include "org_ddp4j_internal_ShapeNatives.h"  // javac -h: the prototypes defined here

#include "ddp4j/ops.h"
#include "jni/jni_util.h"

using namespace ddp4j;
using namespace ddp4j::jni;

extern "C" {

JNIEXPORT jlong JNICALL Java_org_ddp4j_internal_ShapeNatives_permute(JNIEnv* env, jclass, jlong x, jlongArray dims, jlongArray results) {
  return guarded(env, [&] { return result_of(env, results, ops::permute(required_tensor_of(x), shape_of(env, dims))); });
}

JNIEXPORT jlong JNICALL Java_org_ddp4j_internal_ShapeNatives_transpose(JNIEnv* env, jclass, jlong x, jint d0, jint d1, jlongArray results) {
  return guarded(env, [&] { return result_of(env, results, ops::transpose(required_tensor_of(x), d0, d1)); });
}

JNIEXPORT jlong JNICALL Java_org_ddp4j_internal_ShapeNatives_cat(JNIEnv* env, jclass, jlongArray xs, jint dim, jlongArray results) {
  return guarded(env, [&] { return result_of(env, results, ops::cat(tensors_of(env, xs), dim)); });
}

JNIEXPORT jlong JNICALL Java_org_ddp4j_internal_ShapeNatives_narrow(JNIEnv* env, jclass, jlong x, jint dim, jlong start, jlong length, jlongArray results) {
  return guarded(env, [&] { return result_of(env, results, ops::narrow(required_tensor_of(x), dim, start, length)); });
}

JNIEXPORT jlong JNICALL Java_org_ddp4j_internal_ShapeNatives_narrowBackward(JNIEnv* env, jclass, jlong gy, jlongArray xShape, jint dim, jlong start, jlongArray results) {
  return guarded(env, [&] { return result_of(env, results, ops::narrow_backward(required_tensor_of(gy), shape_of(env, xShape), dim, start)); });
}

JNIEXPORT jlong JNICALL Java_org_ddp4j_internal_ShapeNatives_indexSelect(JNIEnv* env, jclass, jlong x, jint dim, jlong index, jlongArray results) {
  return guarded(env, [&] { return result_of(env, results, ops::index_select(required_tensor_of(x), dim, required_tensor_of(index))); });
}

JNIEXPORT jlong JNICALL Java_org_ddp4j_internal_ShapeNatives_indexSelectBackward(JNIEnv* env, jclass, jlong gy, jlongArray xShape, jint dim, jlong index, jlongArray results) {
  return guarded(env, [&] { return result_of(env, results, ops::index_select_backward(required_tensor_of(gy), shape_of(env, xShape), dim, required_tensor_of(index))); });
}

JNIEXPORT jlong JNICALL Java_org_ddp4j_internal_ShapeNatives_gather(JNIEnv* env, jclass, jlong x, jint dim, jlong index, jlongArray results) {
  return guarded(env, [&] { return result_of(env, results, ops::gather(required_tensor_of(x), dim, required_tensor_of(index))); });
}

JNIEXPORT jlong JNICALL Java_org_ddp4j_internal_ShapeNatives_gatherBackward(JNIEnv* env, jclass, jlong gy, jlongArray xShape, jint dim, jlong index, jlongArray results) {
  return guarded(env, [&] { return result_of(env, results, ops::gather_backward(required_tensor_of(gy), shape_of(env, xShape), dim, required_tensor_of(index))); });
}

JNIEXPORT jlong JNICALL Java_org_ddp4j_internal_ShapeNatives_triangle(JNIEnv* env, jclass, jlong x, jlong diagonal, jboolean upper, jlongArray results) {
  return guarded(env, [&] { return result_of(env, results, ops::triangle(required_tensor_of(x), diagonal, upper == JNI_TRUE)); });
}

}  // extern "C"
