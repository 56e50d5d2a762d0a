// JNI for org.ddp4j.internal.JniCalls: the calling thread's count of JNI crossings.
#include <jni.h>

#include "org_ddp4j_internal_JniCalls.h"  // javac -h: the prototypes defined here

#include "jni/jni_util.h"

extern "C" {

// Not guarded: reading the counter must not move it.
JNIEXPORT jlong JNICALL Java_org_ddp4j_internal_JniCalls_count(JNIEnv*, jclass) {
  return static_cast<jlong>(ddp4j::jni::t_jni_calls);
}

}  // extern "C"
