// JNI for org.ddp4j.internal.AdamNatives: the Adam / AdamW update (ops_adam.cpp).
#include <jni.h>

#include "org_ddp4j_internal_AdamNatives.h"  // javac -h: the prototypes defined here

#include "ddp4j/ops.h"
#include "jni/jni_util.h"

using namespace ddp4j;
using namespace ddp4j::jni;

namespace {

kernels::AdamOptions options_of(jdouble lr, jdouble beta1, jdouble beta2, jdouble eps, jdouble weightDecay,
                                jboolean amsgrad, jboolean decoupled) {
  kernels::AdamOptions o;
  o.lr = lr;
  o.beta1 = beta1;
  o.beta2 = beta2;
  o.eps = eps;
  o.weight_decay = weightDecay;
  o.amsgrad = amsgrad;
  o.decoupled = decoupled;
  return o;
}

std::vector<jlong> longs_of(JNIEnv* env, jlongArray array) {
  std::vector<jlong> out(static_cast<std::size_t>(env->GetArrayLength(array)));
  env->GetLongArrayRegion(array, 0, static_cast<jsize>(out.size()), out.data());
  return out;
}

}  // namespace

extern "C" {

JNIEXPORT void JNICALL Java_org_ddp4j_internal_AdamNatives_adamStep(JNIEnv* env, jclass, jlong param, jlong grad,
                                                                     jlong expAvg, jlong expAvgSq, jlong maxExpAvgSq,
                                                                     jdouble lr, jdouble beta1, jdouble beta2,
                                                                     jdouble eps, jdouble weightDecay, jboolean amsgrad,
                                                                     jboolean decoupled, jlong step) {
  guarded(env, [&] {
    kernels::AdamOptions o = options_of(lr, beta1, beta2, eps, weightDecay, amsgrad, decoupled);
    // An absent max_exp_avg_sq (handle 0) stays undefined; the op rejects it when amsgrad needs one.
    Tensor absent;
    Tensor& vmax = maxExpAvgSq == 0 ? absent : mutable_tensor_of(maxExpAvgSq);
    ops::adam_step_(mutable_tensor_of(param), tensor_of(grad), mutable_tensor_of(expAvg), mutable_tensor_of(expAvgSq),
                    vmax, o, step);
  });
}

JNIEXPORT void JNICALL Java_org_ddp4j_internal_AdamNatives_adamSteps(JNIEnv* env, jclass, jlongArray params,
                                                                      jlongArray grads, jlongArray expAvgs,
                                                                      jlongArray expAvgSqs, jlongArray maxExpAvgSqs,
                                                                      jlongArray steps, jdouble lr, jdouble beta1,
                                                                      jdouble beta2, jdouble eps, jdouble weightDecay,
                                                                      jboolean amsgrad, jboolean decoupled) {
  guarded(env, [&] {
    const kernels::AdamOptions o = options_of(lr, beta1, beta2, eps, weightDecay, amsgrad, decoupled);
    const std::vector<jlong> p = longs_of(env, params), g = longs_of(env, grads), m = longs_of(env, expAvgs),
                             v = longs_of(env, expAvgSqs), s = longs_of(env, steps);
    const std::vector<jlong> vmax = maxExpAvgSqs == nullptr ? std::vector<jlong>() : longs_of(env, maxExpAvgSqs);
    const std::size_t n = p.size();
    DDP4J_CHECK_ARG(g.size() == n && m.size() == n && v.size() == n && s.size() == n && (!amsgrad || vmax.size() == n),
                    "adam: the group's arrays of handles differ in length");
    std::vector<kernels::AdamTensors> group;
    for (std::size_t i = 0; i < n; i++) {
      group.push_back({&mutable_tensor_of(p[i]), &tensor_of(g[i]), &mutable_tensor_of(m[i]), &mutable_tensor_of(v[i]),
                       amsgrad ? &mutable_tensor_of(vmax[i]) : nullptr, s[i]});
    }
    ops::adam_steps_(group, o);
  });
}

}  // extern "C"
