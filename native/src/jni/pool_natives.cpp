// JNI for org.ddp4j.internal.PoolNatives: max-, average- and adaptive average pooling, forward and
// backward (ops_pool.cpp).
#include <jni.h>

#include "org_ddp4j_internal_PoolNatives.h"  // javac -h: the prototypes defined here

#include "ddp4j/ops.h"
#include "jni/jni_util.h"

using namespace ddp4j;
using namespace ddp4j::jni;

namespace {
kernels::Pool2dGeometry geometry(jint kh, jint kw, jint sh, jint sw, jint ph, jint pw, jint dh, jint dw,
                                 jboolean ceil_mode) {
  kernels::Pool2dGeometry g;
  g.kernel_h = kh;
  g.kernel_w = kw;
  g.stride_h = sh;
  g.stride_w = sw;
  g.pad_h = ph;
  g.pad_w = pw;
  g.dilation_h = dh;
  g.dilation_w = dw;
  g.ceil_mode = ceil_mode == JNI_TRUE;
  return g;
}
}  // namespace

extern "C" {

JNIEXPORT void JNICALL Java_org_ddp4j_internal_PoolNatives_maxPool2dForward(JNIEnv* env, jclass, jlong x, jint kh,
                                                                            jint kw, jint sh, jint sw, jint ph, jint pw,
                                                                            jint dh, jint dw, jboolean ceilMode,
                                                                            jlongArray results) {
  guarded(env, [&] {
    results_of(env, results, ops::max_pool2d_forward(required_tensor_of(x), geometry(kh, kw, sh, sw, ph, pw, dh, dw,
                                                                                      ceilMode)));
  });
}

JNIEXPORT jlong JNICALL Java_org_ddp4j_internal_PoolNatives_maxPool2dBackward(JNIEnv* env, jclass, jlong gy,
                                                                              jlong indices, jlongArray xShape,
                                                                              jlongArray results) {
  return guarded(env, [&] {
    return result_of(env, results,
        ops::max_pool2d_backward(required_tensor_of(gy), required_tensor_of(indices), shape_of(env, xShape)));
  });
}

JNIEXPORT jlong JNICALL Java_org_ddp4j_internal_PoolNatives_avgPool2dForward(JNIEnv* env, jclass, jlong x, jint kh,
                                                                             jint kw, jint sh, jint sw, jint ph,
                                                                             jint pw, jboolean ceilMode,
                                                                             jboolean countIncludePad,
                                                                             jlong divisorOverride,
                                                                             jlongArray results) {
  return guarded(env, [&] {
    return result_of(env, results,
        ops::avg_pool2d_forward(required_tensor_of(x), geometry(kh, kw, sh, sw, ph, pw, 1, 1, ceilMode),
                                countIncludePad == JNI_TRUE, divisorOverride));
  });
}

JNIEXPORT jlong JNICALL Java_org_ddp4j_internal_PoolNatives_avgPool2dBackward(JNIEnv* env, jclass, jlong gy,
                                                                              jlongArray xShape, jint kh, jint kw,
                                                                              jint sh, jint sw, jint ph, jint pw,
                                                                              jboolean ceilMode,
                                                                              jboolean countIncludePad,
                                                                              jlong divisorOverride,
                                                                              jlongArray results) {
  return guarded(env, [&] {
    return result_of(env, results,
        ops::avg_pool2d_backward(required_tensor_of(gy), shape_of(env, xShape),
                                 geometry(kh, kw, sh, sw, ph, pw, 1, 1, ceilMode), countIncludePad == JNI_TRUE,
                                 divisorOverride));
  });
}

JNIEXPORT jlong JNICALL Java_org_ddp4j_internal_PoolNatives_adaptiveAvgPool2dForward(JNIEnv* env, jclass, jlong x,
                                                                                     jlong outH, jlong outW,
                                                                                     jlongArray results) {
  return guarded(env, [&] {
    return result_of(env, results, ops::adaptive_avg_pool2d_forward(required_tensor_of(x), outH, outW));
  });
}

JNIEXPORT jlong JNICALL Java_org_ddp4j_internal_PoolNatives_adaptiveAvgPool2dBackward(JNIEnv* env, jclass, jlong gy,
                                                                                      jlongArray xShape,
                                                                                      jlongArray results) {
  return guarded(env, [&] {
    return result_of(env, results, ops::adaptive_avg_pool2d_backward(required_tensor_of(gy), shape_of(env, xShape)));
  });
}

}  // extern "C"
