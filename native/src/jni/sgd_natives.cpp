// JNI for org.ddp4j.internal.SgdNatives: the SGD update (ops_sgd.cpp).
#include <jni.h>

#include "org_ddp4j_internal_SgdNatives.h"  // javac -h: the prototypes defined here

#include "ddp4j/ops.h"
#include "jni/jni_util.h"

using namespace ddp4j;
using namespace ddp4j::jni;

extern "C" {

JNIEXPORT void JNICALL Java_org_ddp4j_internal_SgdNatives_sgdStep(JNIEnv* env, jclass, jlong param, jlong grad,
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
