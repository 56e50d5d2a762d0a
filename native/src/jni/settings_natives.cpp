// JNI for org.ddp4j.internal.NativeSettings: the DDP4J_* values Java's Setting parsed, handed down
// once when the library loads (core/settings.h).
#include <jni.h>

#include "org_ddp4j_internal_NativeSettings.h"  // javac -h: the prototypes defined here

#include <string>
#include <utility>
#include <vector>

#include "core/settings.h"
#include "jni/jni_util.h"

extern "C" {

JNIEXPORT void JNICALL Java_org_ddp4j_internal_NativeSettings_handDown(JNIEnv* env, jclass, jobjectArray names,
                                                                       jobjectArray values) {
  ddp4j::jni::guarded(env, [&] {
    const jsize n = env->GetArrayLength(names);
    DDP4J_CHECK_ARG(env->GetArrayLength(values) == n, "NativeSettings.handDown: ", n, " names but ",
                    env->GetArrayLength(values), " values");
    std::vector<std::pair<std::string, std::string>> handed;
    for (jsize i = 0; i < n; i++) {
      auto name = static_cast<jstring>(env->GetObjectArrayElement(names, i));
      auto value = static_cast<jstring>(env->GetObjectArrayElement(values, i));
      handed.emplace_back(ddp4j::jni::string_of(env, name, "a setting's name"),
                          ddp4j::jni::string_of(env, value, "a setting's value"));
      env->DeleteLocalRef(name);
      env->DeleteLocalRef(value);
    }
    ddp4j::settings::hand_down(std::move(handed));
  });
}

}  // extern "C"
