// JNI for org.ddp4j.internal.TransformerNatives: embedding, layer norm, GELU and the
// large-vocabulary cross entropy, forward and backward (ops_transformer.cpp).
#include <jni.h>

#include "org_ddp4j_internal_TransformerNatives.h"  // javac -h: the prototypes defined here

#include "ddp4j/transformer_ops.h"
#include "jni/jni_util.h"

using namespace ddp4j;
using namespace ddp4j::jni;

extern "C" {

JNIEXPORT jlong JNICALL Java_org_ddp4j_internal_TransformerNatives_embeddingForward(JNIEnv* env, jclass, jlong index,
                                                                                   jlong weight, jlongArray results) {
  return guarded(env, [&] {
    return result_of(env, results, ops::embedding_forward(required_tensor_of(index), required_tensor_of(weight)));
  });
}

JNIEXPORT jlong JNICALL Java_org_ddp4j_internal_TransformerNatives_embeddingBackward(
    JNIEnv* env, jclass, jlong gout, jlong index, jlong numEmbeddings, jlong paddingIdx, jlongArray results) {
  return guarded(env, [&] {
    return result_of(env, results, ops::embedding_backward(required_tensor_of(gout), required_tensor_of(index),
                                                           numEmbeddings, paddingIdx));
  });
}

JNIEXPORT void JNICALL Java_org_ddp4j_internal_TransformerNatives_layerNormForward(
    JNIEnv* env, jclass, jlong x, jint normalizedDims, jlong weight, jlong bias, jdouble eps, jlongArray results) {
  guarded(env, [&] {
    results_of(env, results, ops::layer_norm_forward(required_tensor_of(x), normalizedDims, tensor_of(weight),
                                                     tensor_of(bias), eps));
  });
}

JNIEXPORT void JNICALL Java_org_ddp4j_internal_TransformerNatives_layerNormBackward(
    JNIEnv* env, jclass, jlong gy, jlong x, jint normalizedDims, jlong mean, jlong rstd, jlong weight,
    jboolean hasBias, jlongArray results) {
  guarded(env, [&] {
    results_of(env, results, ops::layer_norm_backward(required_tensor_of(gy), required_tensor_of(x), normalizedDims,
                                                      required_tensor_of(mean), required_tensor_of(rstd),
                                                      tensor_of(weight), hasBias));
  });
}

JNIEXPORT jlong JNICALL Java_org_ddp4j_internal_TransformerNatives_geluForward(JNIEnv* env, jclass, jlong x,
                                                                              jboolean tanh, jlongArray results) {
  return guarded(env, [&] { return result_of(env, results, ops::gelu_forward(required_tensor_of(x), tanh)); });
}

JNIEXPORT jlong JNICALL Java_org_ddp4j_internal_TransformerNatives_geluBackward(JNIEnv* env, jclass, jlong gy,
                                                                               jlong x, jboolean tanh,
                                                                               jlongArray results) {
  return guarded(env, [&] {
    return result_of(env, results, ops::gelu_backward(required_tensor_of(gy), required_tensor_of(x), tanh));
  });
}

JNIEXPORT void JNICALL Java_org_ddp4j_internal_TransformerNatives_crossEntropyLseForward(
    JNIEnv* env, jclass, jlong logits, jlong target, jlong ignoreIndex, jlongArray results) {
  guarded(env, [&] {
    results_of(env, results,
               ops::cross_entropy_lse_forward(required_tensor_of(logits), required_tensor_of(target), ignoreIndex));
  });
}

JNIEXPORT jlong JNICALL Java_org_ddp4j_internal_TransformerNatives_crossEntropyLseBackward(
    JNIEnv* env, jclass, jlong gout, jlong logits, jlong lse, jlong target, jlong ignoreIndex, jlongArray results) {
  return guarded(env, [&] {
    return result_of(env, results, ops::cross_entropy_lse_backward(required_tensor_of(gout), required_tensor_of(logits),
                                                                   required_tensor_of(lse), required_tensor_of(target),
                                                                   ignoreIndex));
  });
}

JNIEXPORT void JNICALL Java_org_ddp4j_internal_TransformerNatives_linearCrossEntropy(
    JNIEnv* env, jclass, jlong h, jlong w, jlong target, jlong ignoreIndex, jboolean needGh, jboolean needGw,
    jint compute, jlongArray results) {
  guarded(env, [&] {
    DDP4J_CHECK_ARG(compute >= 0 && compute < kNumDTypes, "linear_cross_entropy: no dtype has code ", compute);
    results_of(env, results,
               ops::linear_cross_entropy(required_tensor_of(h), required_tensor_of(w), required_tensor_of(target),
                                         ignoreIndex, needGh, needGw, static_cast<DType>(compute)));
  });
}

}  // extern "C"
