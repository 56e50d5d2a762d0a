#include "jni/jni_util.h"

namespace ddp4j::jni {
JavaVM* g_vm = nullptr;  // set once by JNI_OnLoad
thread_local long long t_jni_calls = 0;

namespace {

const char* java_class_for(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::InvalidArgument: return "java/lang/IllegalArgumentException";
    case ErrorKind::IllegalState: return "java/lang/IllegalStateException";
    case ErrorKind::Distributed: return "org/ddp4j/distributed/DistributedException";
    case ErrorKind::Timeout: return "org/ddp4j/distributed/DistributedTimeoutException";
    case ErrorKind::OutOfMemory: return "java/lang/OutOfMemoryError";
    default: return "java/lang/RuntimeException";
  }
}
}  // namespace

JavaVM* java_vm() { return g_vm; }

void throw_java(JNIEnv* env, ErrorKind kind, const char* message) {
  if (env->ExceptionCheck()) return;  // keep the first (Java) exception, e.g. from a Store callback
  jclass cls = env->FindClass(java_class_for(kind));
  if (cls == nullptr) {
    env->ExceptionClear();
    cls = env->FindClass("java/lang/RuntimeException");
  }
  env->ThrowNew(cls, message);
}

std::vector<Tensor> tensors_of(JNIEnv* env, jlongArray handles) {
  jsize n = env->GetArrayLength(handles);
  std::vector<jlong> hs(static_cast<size_t>(n));
  env->GetLongArrayRegion(handles, 0, n, hs.data());
  std::vector<Tensor> out;
  out.reserve(hs.size());
  for (jlong h : hs) out.push_back(mutable_tensor_of(h));
  return out;
}

jlongArray handles_of(JNIEnv* env, std::vector<Tensor> tensors) {
  std::vector<jlong> hs;
  hs.reserve(tensors.size());
  for (auto& t : tensors) hs.push_back(handle_of(std::move(t)));
  jlongArray out = env->NewLongArray(static_cast<jsize>(hs.size()));
  if (out == nullptr) {
    for (jlong h : hs) delete reinterpret_cast<Tensor*>(h);
    throw Error(ErrorKind::OutOfMemory, "cannot allocate a Java long[] for tensor handles");
  }
  env->SetLongArrayRegion(out, 0, static_cast<jsize>(hs.size()), hs.data());
  return out;
}

Shape shape_of(JNIEnv* env, jlongArray shape) {
  jsize n = env->GetArrayLength(shape);
  Shape s(static_cast<size_t>(n));
  env->GetLongArrayRegion(shape, 0, n, reinterpret_cast<jlong*>(s.data()));
  return s;
}

}  // namespace ddp4j::jni

extern "C" JNIEXPORT jint JNICALL JNI_OnLoad(JavaVM* vm, void*) {
  ddp4j::jni::g_vm = vm;
  return JNI_VERSION_1_8;
}
