// JNI for org.ddp4j.internal.MathNatives: linear, ReLU, losses and the SGD update.
#include <jni.h>

#include "ddp4j/ops.h"
#include "jni/jni_util.h"

using namespace ddp4j;
using namespace ddp4j::jni;

extern "C" {

JNIEXPORT jlong JNICALL Java_org_ddp4j_internal_MathNatives_linearForward(JNIEnv* env, jclass, jlong x, jlong w,
                                                                          jlong b) {
  return guarded(env, [&] { return handle_of(ops::linear_forward(tensor_of(x), tensor_of(w), tensor_of(b))); });
}

JNIEXPORT jlongArray JNICALL Java_org_ddp4j_internal_MathNatives_linearBackward(JNIEnv* env, jclass, jlong gy,
                                                                                jlong x, jlong w, jboolean needGx,
                                                                                jboolean hasBias) {
  return guarded(env, [&] {
    return handles_of(env, ops::linear_backward(tensor_of(gy), tensor_of(x), tensor_of(w), needGx, hasBias));
  });
}

JNIEXPORT jlong JNICALL Java_org_ddp4j_internal_MathNatives_reluForward(JNIEnv* env, jclass, jlong x) {
  return guarded(env, [&] { return handle_of(ops::relu_forward(tensor_of(x))); });
}

JNIEXPORT jlong JNICALL Java_org_ddp4j_internal_MathNatives_reluBackward(JNIEnv* env, jclass, jlong gy, jlong y) {
  return guarded(env, [&] { return handle_of(ops::relu_backward(tensor_of(gy), tensor_of(y))); });
}

JNIEXPORT jlong JNICALL Java_org_ddp4j_internal_MathNatives_mseLossForward(JNIEnv* env, jclass, jlong input,
                                                                           jlong target) {
  return guarded(env, [&] { return handle_of(ops::mse_loss_forward(tensor_of(input), tensor_of(target))); });
}

JNIEXPORT jlong JNICALL Java_org_ddp4j_internal_MathNatives_mseLossBackward(JNIEnv* env, jclass, jlong gout,
                                                                            jlong input, jlong target) {
  return guarded(env, [&] {
    return handle_of(ops::mse_loss_backward(tensor_of(gout), tensor_of(input), tensor_of(target)));
  });
}

JNIEXPORT jlongArray JNICALL Java_org_ddp4j_internal_MathNatives_crossEntropyForward(JNIEnv* env, jclass,
                                                                                     jlong logits, jlong target) {
  return guarded(env, [&] { return handles_of(env, ops::cross_entropy_forward(tensor_of(logits), tensor_of(target))); });
}

JNIEXPORT jlong JNICALL Java_org_ddp4j_internal_MathNatives_crossEntropyBackward(JNIEnv* env, jclass, jlong gout,
                                                                                 jlong probs, jlong target) {
  return guarded(env, [&] {
    return handle_of(ops::cross_entropy_backward(tensor_of(gout), tensor_of(probs), tensor_of(target)));
  });
}

JNIEXPORT void JNICALL Java_org_ddp4j_internal_MathNatives_sgdStep(JNIEnv* env, jclass, jlong param, jlong grad,
                                                                   jlong momentumBuf, jdouble lr, jdouble momentum,
                                                                   jdouble dampening, jdouble weightDecay,
                                                                   jboolean nesterov, jboolean first) {
  guarded(env, [&] {
    kernels::SgdOptions o;
    o.lr = lr;
    o.momentum = momentum;
    o.dampening = dampening;
    o.weight_decay = weightDecay;
    o.nesterov = nesterov;
    // An absent buffer (handle 0) stays undefined; the op rejects it when momentum needs one.
    Tensor absent;
    Tensor& buf = momentumBuf == 0 ? absent : mutable_tensor_of(momentumBuf);
    ops::sgd_step_(mutable_tensor_of(param), tensor_of(grad), buf, o, first);
  });
}

}  // extern "C"
