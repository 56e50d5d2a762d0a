// JNI for org.ddp4j.internal.PoolNatives: max-pool forward and backward (ops_pool.cpp).
#include <jni.h>

#include "org_ddp4j_internal_PoolNatives.h"  // javac -h: the prototypes defined here

#include "ddp4j/ops.h"
#include "jni/jni_util.h"

using namespace ddp4j;
using namespace ddp4j::jni;

extern "C" {

JNIEXPORT void JNICALL Java_org_ddp4j_internal_PoolNatives_maxPool2dForward(JNIEnv* env, jclass, jlong x, jint kh,
                                                                            jint kw, jint sh, jint sw, jint ph, jint pw,
                                                                            jlongArray results) {
  guarded(env, [&] {
    kernels::Pool2dGeometry g;
    g.kernel_h = kh;
    g.kernel_w = kw;
    g.stride_h = sh;
    g.stride_w = sw;
    g.pad_h = ph;
    g.pad_w = pw;
    results_of(env, results, ops::max_pool2d_forward(required_tensor_of(x), g));
  });
}

JNIEXPORT jlong JNICALL Java_org_ddp4j_internal_PoolNatives_maxPool2dBackward(JNIEnv* env, jclass, jlong gy,
                                                                              jlong indices, jlongArray xShape,
                                                                              jlongArray results) {
  return guarded(env, [&] {
    return result_of(env, results,
        ops::max_pool2d_backward(required_tensor_of(gy), required_tensor_of(indices), shape_of(env, xShape)));
  });
}

}  // extern "C"
