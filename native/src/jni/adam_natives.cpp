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
    std::vector<Tensor> p = tensors_of(env, params), g = tensors_of(env, grads), m = tensors_of(env, expAvgs),
                        v = tensors_of(env, expAvgSqs);
    DDP4J_CHECK_ARG(!amsgrad || maxExpAvgSqs != nullptr, "adam: amsgrad needs the group's max_exp_avg_sq handles");
    std::vector<Tensor> vmax = amsgrad ? tensors_of(env, maxExpAvgSqs) : std::vector<Tensor>();
    const Shape s = shape_of(env, steps);  // a long[] of step numbers, read as shape_of reads any long[]
    const std::size_t n = p.size();
    DDP4J_CHECK_ARG(g.size() == n && m.size() == n && v.size() == n && s.size() == n && (!amsgrad || vmax.size() == n),
                    "adam: the group's arrays of handles differ in length");
    std::vector<kernels::AdamTensors> group;
    for (std::size_t i = 0; i < n; i++) {
      group.push_back({&p[i], &g[i], &m[i], &v[i], amsgrad ? &vmax[i] : nullptr, s[i]});
    }
    ops::adam_steps_(group, o);
  });
}

}  // extern "C"
