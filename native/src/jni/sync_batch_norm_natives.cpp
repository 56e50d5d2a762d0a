// JNI for org.ddp4j.internal.SyncBatchNormNatives: SyncBatchNorm's local passes (ops_sync_batch_norm.cpp).
#include <jni.h>

#include "org_ddp4j_internal_SyncBatchNormNatives.h"  // javac -h: the prototypes defined here

#include "ddp4j/ops.h"
#include "jni/jni_util.h"

using namespace ddp4j;
using namespace ddp4j::jni;

extern "C" {

JNIEXPORT jlong JNICALL Java_org_ddp4j_internal_SyncBatchNormNatives_syncBatchNormStats(JNIEnv* env, jclass, jlong x,
                                                                                        jlongArray results) {
  return guarded(env, [&] { return result_of(env, results, ops::sync_batch_norm_stats(required_tensor_of(x))); });
}

JNIEXPORT jlong JNICALL Java_org_ddp4j_internal_SyncBatchNormNatives_syncBatchNormGatherStats(
    JNIEnv* env, jclass, jlong gathered, jlong channels, jlong runningMean, jlong runningVar, jdouble momentum,
    jdouble eps, jlongArray results) {
  return guarded(env, [&] {
    Tensor none_mean, none_var;  // no running statistics
    Tensor& rm = runningMean != 0 ? mutable_tensor_of(runningMean) : none_mean;
    Tensor& rv = runningVar != 0 ? mutable_tensor_of(runningVar) : none_var;
    int64_t total = 0;
    results_of(env, results,
               ops::sync_batch_norm_gather_stats(required_tensor_of(gathered), channels, rm, rv, momentum, eps,
                                                 &total));
    return static_cast<jlong>(total);
  });
}

JNIEXPORT jlong JNICALL Java_org_ddp4j_internal_SyncBatchNormNatives_syncBatchNormElemt(
    JNIEnv* env, jclass, jlong x, jlong mean, jlong meanLo, jlong invstd, jlong gamma, jlong beta, jlong residual,
    jboolean relu, jlongArray results) {
  return guarded(env, [&] {
    return result_of(env, results,
                     ops::sync_batch_norm_elemt(required_tensor_of(x), required_tensor_of(mean),
                                                required_tensor_of(meanLo), required_tensor_of(invstd),
                                                required_tensor_of(gamma), required_tensor_of(beta),
                                                tensor_of(residual), relu == JNI_TRUE));
  });
}

JNIEXPORT void JNICALL Java_org_ddp4j_internal_SyncBatchNormNatives_syncBatchNormBackwardReduce(
    JNIEnv* env, jclass, jlong gy, jlong x, jlong mean, jlong meanLo, jlong invstd, jlongArray results) {
  guarded(env, [&] {
    results_of(env, results,
               ops::sync_batch_norm_backward_reduce(required_tensor_of(gy), required_tensor_of(x),
                                                    required_tensor_of(mean), required_tensor_of(meanLo),
                                                    required_tensor_of(invstd)));
  });
}

JNIEXPORT jlong JNICALL Java_org_ddp4j_internal_SyncBatchNormNatives_syncBatchNormBackwardElemt(
    JNIEnv* env, jclass, jlong gy, jlong x, jlong mean, jlong meanLo, jlong invstd, jlong gamma, jlong sums,
    jlong count, jlongArray results) {
  return guarded(env, [&] {
    return result_of(env, results,
                     ops::sync_batch_norm_backward_elemt(required_tensor_of(gy), required_tensor_of(x),
                                                         required_tensor_of(mean), required_tensor_of(meanLo),
                                                         required_tensor_of(invstd),
                                                         required_tensor_of(gamma), required_tensor_of(sums), count));
  });
}

}  // extern "C"
