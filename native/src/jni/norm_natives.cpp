// JNI for org.ddp4j.internal.NormNatives: batch-norm forward and backward, plain and fused with ReLU (ops_norm.cpp).
#include <jni.h>

#include "org_ddp4j_internal_NormNatives.h"  // javac -h: the prototypes defined here

#include "ddp4j/ops.h"
#include "jni/jni_util.h"

using namespace ddp4j;
using namespace ddp4j::jni;

extern "C" {

JNIEXPORT void JNICALL Java_org_ddp4j_internal_NormNatives_batchNorm2dForwardTrain(
    JNIEnv* env, jclass, jlong x, jlong gamma, jlong beta, jlong runningMean, jlong runningVar, jdouble momentum,
    jdouble eps, jlongArray results) {
  guarded(env, [&] {
    results_of(env, results,
        ops::batch_norm2d_forward_train(required_tensor_of(x), required_tensor_of(gamma), required_tensor_of(beta),
            mutable_tensor_of(runningMean),
            mutable_tensor_of(runningVar), momentum, eps));
  });
}

JNIEXPORT jlong JNICALL Java_org_ddp4j_internal_NormNatives_batchNorm2dForwardEval(
    JNIEnv* env, jclass, jlong x, jlong gamma, jlong beta, jlong runningMean, jlong runningVar, jdouble eps,
    jlongArray results) {
  return guarded(env, [&] {
    return result_of(env, results,
        ops::batch_norm2d_forward_eval(required_tensor_of(x), required_tensor_of(gamma), required_tensor_of(beta),
            required_tensor_of(runningMean), required_tensor_of(runningVar),
            eps));
  });
}

JNIEXPORT void JNICALL Java_org_ddp4j_internal_NormNatives_batchNorm2dBackward(JNIEnv* env, jclass, jlong gy, jlong x,
                                                                               jlong gamma, jlong saveMean,
                                                                               jlong saveInvstd, jlongArray results) {
  guarded(env, [&] {
    results_of(env, results,
        ops::batch_norm2d_backward(required_tensor_of(gy), required_tensor_of(x), required_tensor_of(gamma),
            required_tensor_of(saveMean), required_tensor_of(saveInvstd)));
  });
}

JNIEXPORT void JNICALL Java_org_ddp4j_internal_NormNatives_batchNorm2dReluForwardTrain(
    JNIEnv* env, jclass, jlong x, jlong gamma, jlong beta, jlong runningMean, jlong runningVar, jdouble momentum,
    jdouble eps, jlong residual, jlongArray results) {
  guarded(env, [&] {
    results_of(env, results,
        ops::batch_norm2d_relu_forward_train(required_tensor_of(x), required_tensor_of(gamma),
            required_tensor_of(beta), mutable_tensor_of(runningMean), mutable_tensor_of(runningVar), momentum, eps,
            tensor_of(residual)));
  });
}

JNIEXPORT jlong JNICALL Java_org_ddp4j_internal_NormNatives_batchNorm2dReluForwardEval(
    JNIEnv* env, jclass, jlong x, jlong gamma, jlong beta, jlong runningMean, jlong runningVar, jdouble eps,
    jlong residual, jlongArray results) {
  return guarded(env, [&] {
    return result_of(env, results,
        ops::batch_norm2d_relu_forward_eval(required_tensor_of(x), required_tensor_of(gamma),
            required_tensor_of(beta), required_tensor_of(runningMean), required_tensor_of(runningVar), eps,
            tensor_of(residual)));
  });
}

JNIEXPORT jlong JNICALL Java_org_ddp4j_internal_NormNatives_batchNorm2dRecompute(
    JNIEnv* env, jclass, jlong x, jlong affine, jlong residual, jboolean relu, jlongArray results) {
  return guarded(env, [&] {
    return result_of(env, results, ops::batch_norm2d_recompute(required_tensor_of(x), required_tensor_of(affine),
                                                               tensor_of(residual), relu == JNI_TRUE));
  });
}

JNIEXPORT void JNICALL Java_org_ddp4j_internal_NormNatives_batchNorm2dReluBackward(
    JNIEnv* env, jclass, jlong gy, jlong y, jlong x, jlong gamma, jlong saveMean, jlong saveInvstd,
    jboolean wantMasked, jlong affine, jlongArray results) {
  guarded(env, [&] {
    results_of(env, results,
        ops::batch_norm2d_relu_backward(required_tensor_of(gy), tensor_of(y), required_tensor_of(x),
            required_tensor_of(gamma), required_tensor_of(saveMean), required_tensor_of(saveInvstd),
            wantMasked == JNI_TRUE, tensor_of(affine)));
  });
}

}  // extern "C"
