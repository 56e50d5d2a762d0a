// JNI for org.ddp4j.internal.AttentionNatives: fused scaled dot-product attention forward and
// backward, on separate q, k, v or on one packed qkv projection (ops_attention.cpp).
#include <jni.h>

#include "org_ddp4j_internal_AttentionNatives.h"  // javac -h: the prototypes defined here

#include "ddp4j/transformer_ops.h"
#include "jni/jni_util.h"

using namespace ddp4j;
using namespace ddp4j::jni;

extern "C" {

JNIEXPORT void JNICALL Java_org_ddp4j_internal_AttentionNatives_attentionForward(
    JNIEnv* env, jclass, jlong q, jlong k, jlong v, jlong mask, jboolean causal, jdouble scale, jdouble dropoutP,
    jlong dropoutSeed, jlongArray results) {
  guarded(env, [&] {
    results_of(env, results, ops::attention_forward(required_tensor_of(q), required_tensor_of(k),
                                                    required_tensor_of(v), tensor_of(mask), causal, scale, dropoutP,
                                                    static_cast<uint64_t>(dropoutSeed)));
  });
}

JNIEXPORT void JNICALL Java_org_ddp4j_internal_AttentionNatives_attentionBackward(
    JNIEnv* env, jclass, jlong gout, jlong q, jlong k, jlong v, jlong mask, jlong out, jlong lse, jboolean causal,
    jdouble scale, jdouble dropoutP, jlong dropoutSeed, jlongArray results) {
  guarded(env, [&] {
    results_of(env, results,
               ops::attention_backward(required_tensor_of(gout), required_tensor_of(q), required_tensor_of(k),
                                       required_tensor_of(v), tensor_of(mask), required_tensor_of(out),
                                       required_tensor_of(lse), causal, scale, dropoutP,
                                       static_cast<uint64_t>(dropoutSeed)));
  });
}

JNIEXPORT void JNICALL Java_org_ddp4j_internal_AttentionNatives_attentionPackedForward(
    JNIEnv* env, jclass, jlong qkv, jint heads, jboolean causal, jdouble scale, jdouble dropoutP, jlong dropoutSeed,
    jlongArray results) {
  guarded(env, [&] {
    results_of(env, results, ops::attention_packed_forward(required_tensor_of(qkv), heads, causal, scale, dropoutP,
                                                           static_cast<uint64_t>(dropoutSeed)));
  });
}

JNIEXPORT jlong JNICALL Java_org_ddp4j_internal_AttentionNatives_attentionPackedBackward(
    JNIEnv* env, jclass, jlong gout, jlong qkv, jlong out, jlong lse, jint heads, jboolean causal, jdouble scale,
    jdouble dropoutP, jlong dropoutSeed, jlongArray results) {
  return guarded(env, [&] {
    return result_of(env, results,
                     ops::attention_packed_backward(required_tensor_of(gout), required_tensor_of(qkv),
                                                    required_tensor_of(out), required_tensor_of(lse), heads, causal,
                                                    scale, dropoutP, static_cast<uint64_t>(dropoutSeed)));
  });
}

}  // extern "C"
