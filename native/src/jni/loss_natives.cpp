// JNI for org.ddp4j.internal.LossNatives: MSE and cross-entropy forward and backward (ops_loss.cpp).
#include <jni.h>

#include "org_ddp4j_internal_LossNatives.h"  // javac -h: the prototypes defined here

#include "ddp4j/ops.h"
#include "jni/jni_util.h"

using namespace ddp4j;
using namespace ddp4j::jni;

extern "C" {

JNIEXPORT jlong JNICALL Java_org_ddp4j_internal_LossNatives_mseLossForward(JNIEnv* env, jclass, jlong input,
                                                                           jlong target, jlongArray results) {
  return guarded(env, [&] { return result_of(env, results,
      ops::mse_loss_forward(tensor_of(input), tensor_of(target))); });
}

JNIEXPORT jlong JNICALL Java_org_ddp4j_internal_LossNatives_mseLossBackward(JNIEnv* env, jclass, jlong gout,
                                                                            jlong input,
                                                                            jlong target, jlongArray results) {
  return guarded(env, [&] {
    return result_of(env, results, ops::mse_loss_backward(tensor_of(gout), tensor_of(input), tensor_of(target)));
  });
}

JNIEXPORT void JNICALL Java_org_ddp4j_internal_LossNatives_crossEntropyForward(JNIEnv* env, jclass, jlong logits,
                                                                               jlong target, jlongArray results) {
  guarded(env, [&] { results_of(env, results, ops::cross_entropy_forward(tensor_of(logits), tensor_of(target))); });
}

JNIEXPORT jlong JNICALL Java_org_ddp4j_internal_LossNatives_crossEntropyBackward(
    JNIEnv* env, jclass, jlong gout, jlong probs, jlong target, jlongArray results) {
  return guarded(env, [&] {
    return result_of(env, results, ops::cross_entropy_backward(tensor_of(gout), tensor_of(probs), tensor_of(target)));
  });
}

}  // extern "C"
