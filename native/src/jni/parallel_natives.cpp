// JNI for org.ddp4j.internal.ParallelNatives: the intra-op thread count (parallel.cpp).
#include <jni.h>

#include "org_ddp4j_internal_ParallelNatives.h"  // javac -h: the prototypes defined here

#include "ddp4j/parallel.h"
#include "jni/jni_util.h"

using namespace ddp4j;
using namespace ddp4j::jni;

extern "C" {

JNIEXPORT jint JNICALL Java_org_ddp4j_internal_ParallelNatives_getNumThreads(JNIEnv* env, jclass) {
  return guarded(env, [] { return static_cast<jint>(get_num_threads()); });
}

JNIEXPORT void JNICALL Java_org_ddp4j_internal_ParallelNatives_setNumThreads(JNIEnv* env, jclass, jint n) {
  guarded(env, [&] { set_num_threads(n); });
}

}  // extern "C"
