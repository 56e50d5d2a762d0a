// JNI for org.ddp4j.internal.AdamNatives: the Adam / AdamW update (ops_adam.cpp).
#include <jni.h>

#include "org_ddp4j_internal_AdamNatives.h"  // javac -h: the prototypes defined here

#include "ddp4j/ops.h"
#include "jni/jni_util.h"

using namespace ddp4j;
using namespace ddp4j::jni;

extern "C" {

JNIEXPORT void JNICALL Java_org_ddp4j_internal_AdamNatives_adamStep(JNIEnv* env, jclass, jlong param, jlong grad,
                                                                     jlong expAvg, jlong expAvgSq, jlong maxExpAvgSq,
                                                                     jdouble lr, jdouble beta1, jdouble beta2,
                                                                     jdouble eps, jdouble weightDecay, jboolean amsgrad,
                                                                     jboolean decoupled, jlong step) {
  guarded(env, [&] {
    kernels::AdamOptions o;
    o.lr = lr;
    o.beta1 = beta1;
    o.beta2 = beta2;
    o.eps = eps;
    o.weight_decay = weightDecay;
    o.amsgrad = amsgrad;
    o.decoupled = decoupled;
    // An absent max_exp_avg_sq (handle 0) stays undefined; the op rejects it when amsgrad needs one.
    Tensor absent;
    Tensor& vmax = maxExpAvgSq == 0 ? absent : mutable_tensor_of(maxExpAvgSq);
    ops::adam_step_(mutable_tensor_of(param), tensor_of(grad), mutable_tensor_of(expAvg), mutable_tensor_of(expAvgSq),
                    vmax, o, step);
  });
}

}  // extern "C"
