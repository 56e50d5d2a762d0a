// JNI for org.ddp4j.internal.ConvNatives: conv2d forward and backward (ops_conv.cpp).
#include <jni.h>

#include "org_ddp4j_internal_ConvNatives.h"  // javac -h: the prototypes defined here

#include "ddp4j/ops.h"
#include "jni/jni_util.h"

using namespace ddp4j;
using namespace ddp4j::jni;

namespace {
kernels::Conv2dGeometry conv_geometry(jint sh, jint sw, jint ph, jint pw, jint dh, jint dw, jint groups, jint compute) {
  DDP4J_CHECK_ARG(compute >= 0 && compute < kNumDTypes, "conv2d: no dtype has code ", compute);
  kernels::Conv2dGeometry g;
  g.compute = static_cast<DType>(compute);
  g.stride_h = sh;
  g.stride_w = sw;
  g.pad_h = ph;
  g.pad_w = pw;
  g.dilation_h = dh;
  g.dilation_w = dw;
  g.groups = groups;
  return g;
}
}  // namespace

extern "C" {

JNIEXPORT jlong JNICALL Java_org_ddp4j_internal_ConvNatives_conv2dForward(JNIEnv* env, jclass, jlong x, jlong w,
                                                                          jlong b, jint sh, jint sw, jint ph,
                                                                          jint pw, jint dh, jint dw, jint groups,
                                                                          jint compute, jlongArray results) {
  return guarded(env, [&] {
    return result_of(env, results,
        ops::conv2d_forward(required_tensor_of(x), required_tensor_of(w), tensor_of(b), conv_geometry(sh, sw, ph, pw, dh, dw, groups, compute)));
  });
}

JNIEXPORT void JNICALL Java_org_ddp4j_internal_ConvNatives_conv2dBackward(JNIEnv* env, jclass, jlong gy,
                                                                                jlong x, jlong w, jboolean needGx,
                                                                                jboolean hasBias, jint sh, jint sw,
                                                                                jint ph, jint pw, jint dh, jint dw,
                                                                                jint groups, jint compute,
                                                                                jlongArray results) {
  guarded(env, [&] {
    results_of(env, results,
        ops::conv2d_backward(required_tensor_of(gy), required_tensor_of(x), required_tensor_of(w), needGx, hasBias,
            conv_geometry(sh, sw, ph, pw, dh, dw, groups, compute)));
  });
}

}  // extern "C"
