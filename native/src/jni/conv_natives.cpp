// JNI for org.ddp4j.internal.ConvNatives: Conv2d, BatchNorm2d and MaxPool2d forward and backward.
#include <jni.h>

#include "ddp4j/ops.h"
#include "jni/jni_util.h"

using namespace ddp4j;
using namespace ddp4j::jni;

namespace {
/** A required input: handle 0 throws IllegalArgumentException instead of reaching the op. */
const Tensor& required(jlong handle) { return mutable_tensor_of(handle); }

kernels::Conv2dGeometry conv_geometry(jint sh, jint sw, jint ph, jint pw) {
  kernels::Conv2dGeometry g;
  g.stride_h = sh;
  g.stride_w = sw;
  g.pad_h = ph;
  g.pad_w = pw;
  return g;
}
}  // namespace

extern "C" {

JNIEXPORT jlong JNICALL Java_org_ddp4j_internal_ConvNatives_conv2dForward(JNIEnv* env, jclass, jlong x, jlong w,
                                                                          jlong b, jint sh, jint sw, jint ph,
                                                                          jint pw) {
  return guarded(env, [&] {
    return handle_of(ops::conv2d_forward(required(x), required(w), tensor_of(b), conv_geometry(sh, sw, ph, pw)));
  });
}

JNIEXPORT jlongArray JNICALL Java_org_ddp4j_internal_ConvNatives_conv2dBackward(JNIEnv* env, jclass, jlong gy,
                                                                                jlong x, jlong w, jboolean needGx,
                                                                                jboolean hasBias, jint sh, jint sw,
                                                                                jint ph, jint pw) {
  return guarded(env, [&] {
    return handles_of(env, ops::conv2d_backward(required(gy), required(x), required(w), needGx, hasBias,
                                                conv_geometry(sh, sw, ph, pw)));
  });
}

JNIEXPORT jlongArray JNICALL Java_org_ddp4j_internal_ConvNatives_batchNorm2dForwardTrain(
    JNIEnv* env, jclass, jlong x, jlong gamma, jlong beta, jlong runningMean, jlong runningVar, jdouble momentum,
    jdouble eps) {
  return guarded(env, [&] {
    return handles_of(env, ops::batch_norm2d_forward_train(required(x), required(gamma), required(beta),
                                                           mutable_tensor_of(runningMean),
                                                           mutable_tensor_of(runningVar), momentum, eps));
  });
}

JNIEXPORT jlong JNICALL Java_org_ddp4j_internal_ConvNatives_batchNorm2dForwardEval(JNIEnv* env, jclass, jlong x,
                                                                                   jlong gamma, jlong beta,
                                                                                   jlong runningMean,
                                                                                   jlong runningVar, jdouble eps) {
  return guarded(env, [&] {
    return handle_of(ops::batch_norm2d_forward_eval(required(x), required(gamma), required(beta),
                                                    required(runningMean), required(runningVar), eps));
  });
}

JNIEXPORT jlongArray JNICALL Java_org_ddp4j_internal_ConvNatives_batchNorm2dBackward(JNIEnv* env, jclass, jlong gy,
                                                                                     jlong x, jlong gamma,
                                                                                     jlong saveMean,
                                                                                     jlong saveInvstd) {
  return guarded(env, [&] {
    return handles_of(env, ops::batch_norm2d_backward(required(gy), required(x), required(gamma),
                                                      required(saveMean), required(saveInvstd)));
  });
}

JNIEXPORT jlongArray JNICALL Java_org_ddp4j_internal_ConvNatives_maxPool2dForward(JNIEnv* env, jclass, jlong x,
                                                                                  jint kh, jint kw, jint sh, jint sw,
                                                                                  jint ph, jint pw) {
  return guarded(env, [&] {
    kernels::Pool2dGeometry g;
    g.kernel_h = kh;
    g.kernel_w = kw;
    g.stride_h = sh;
    g.stride_w = sw;
    g.pad_h = ph;
    g.pad_w = pw;
    return handles_of(env, ops::max_pool2d_forward(required(x), g));
  });
}

JNIEXPORT jlong JNICALL Java_org_ddp4j_internal_ConvNatives_maxPool2dBackward(JNIEnv* env, jclass, jlong gy,
                                                                              jlong indices, jlongArray xShape) {
  return guarded(env, [&] {
    return handle_of(ops::max_pool2d_backward(required(gy), required(indices), shape_of(env, xShape)));
  });
}

}  // extern "C"
