#include "jni/jni_util.h"

#include <algorithm>

namespace ddp4j::jni {
JavaVM* g_vm = nullptr;  // set once by JNI_OnLoad
thread_local long long t_jni_calls = 0;

namespace {

const char* java_class_for(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::InvalidArgument: return names::kIllegalArgumentException;
    case ErrorKind::IllegalState: return names::kIllegalStateException;
    case ErrorKind::Distributed: return names::kDistributedException;
    case ErrorKind::Timeout: return names::kDistributedTimeoutException;
    case ErrorKind::Mismatch: return names::kDistributedException;
    case ErrorKind::PeerLost: return names::kDistributedException;
    case ErrorKind::OutOfMemory: return names::kOutOfMemoryError;
    default: return names::kRuntimeException;
  }
}
}  // namespace

JavaVM* java_vm() { return g_vm; }

namespace {
/** A distributed error's kind: its Java exception is made by NativeErrors.create from its facts. */
bool has_facts(ErrorKind kind) {
  return kind == ErrorKind::Distributed || kind == ErrorKind::Timeout || kind == ErrorKind::Mismatch ||
         kind == ErrorKind::PeerLost;
}

void put_call(std::vector<jlong>* numbers, const CallFacts& c) {
  numbers->insert(numbers->end(), {c.present ? 1 : 0, static_cast<jlong>(c.seq), static_cast<jlong>(c.numel), c.kind,
                                   c.arg, c.dtype, c.bucket, c.buckets, c.peer});
}

jstring java_string(JNIEnv* env, const std::string& s) { return env->NewStringUTF(s.c_str()); }

/**
 * The Java exception for a distributed error: NativeErrors.create(kind, message, numbers, texts),
 * the numbers and texts laid out as NativeErrors reads them. Null (with a Java error pending or
 * cleared) when the JVM cannot make it; the caller then throws the plain class.
 */
jthrowable distributed_exception(JNIEnv* env, const Error& e) {
  const ErrorFacts& f = e.facts();
  std::vector<jlong> numbers{f.rank, f.peer, f.peer_pid, static_cast<jlong>(f.loss), static_cast<jlong>(f.seq),
                             f.timeout_ms, f.packet_loss ? 1 : 0};
  put_call(&numbers, f.mine);
  put_call(&numbers, f.theirs);
  jclass errors = env->FindClass(names::kNativeErrors);
  if (errors == nullptr) return nullptr;
  jmethodID create = env->GetStaticMethodID(errors, names::kNativeErrorsCreate.name, names::kNativeErrorsCreate.signature);
  jlongArray number_array = env->NewLongArray(static_cast<jsize>(numbers.size()));
  jclass string_class = env->FindClass(names::kString);
  if (create == nullptr || number_array == nullptr || string_class == nullptr) return nullptr;
  env->SetLongArrayRegion(number_array, 0, static_cast<jsize>(numbers.size()), numbers.data());
  const std::string texts[] = {f.op, f.transport, f.mine.text, f.theirs.text};
  jobjectArray text_array = env->NewObjectArray(4, string_class, nullptr);
  if (text_array == nullptr) return nullptr;
  for (jsize i = 0; i < 4; i++) {
    jstring t = java_string(env, texts[i]);
    if (t == nullptr) return nullptr;
    env->SetObjectArrayElement(text_array, i, t);
    env->DeleteLocalRef(t);
  }
  jstring message = java_string(env, e.what());
  if (message == nullptr) return nullptr;
  auto ex = static_cast<jthrowable>(env->CallStaticObjectMethod(errors, create, static_cast<jint>(e.kind()), message,
                                                                number_array, text_array));
  if (env->ExceptionCheck()) return nullptr;
  return ex;
}
}  // namespace

void throw_java(JNIEnv* env, const Error& e) {
  if (env->ExceptionCheck()) return;  // keep the first (Java) exception, e.g. from a Store callback
  if (has_facts(e.kind())) {
    jthrowable ex = distributed_exception(env, e);
    if (ex != nullptr) {
      env->Throw(ex);
      return;
    }
    env->ExceptionClear();  // the plain class below still carries the message
  }
  throw_java(env, e.kind(), e.what());
}

void throw_java(JNIEnv* env, ErrorKind kind, const char* message) {
  if (env->ExceptionCheck()) return;  // keep the first (Java) exception, e.g. from a Store callback
  jclass cls = env->FindClass(java_class_for(kind));
  if (cls == nullptr) {
    env->ExceptionClear();
    cls = env->FindClass(names::kRuntimeException);
  }
  env->ThrowNew(cls, message);
}

std::string string_of(JNIEnv* env, jstring s, const char* what) {
  if (s == nullptr) return std::string();
  const char* chars = env->GetStringUTFChars(s, nullptr);
  if (chars == nullptr) {
    env->ExceptionClear();  // the JVM's OutOfMemoryError; ours below names what was read
    throw Error(ErrorKind::OutOfMemory, detail::concat("cannot read ", what, ": out of memory"));
  }
  std::string out(chars);
  env->ReleaseStringUTFChars(s, chars);
  return out;
}

jclass find_class(JNIEnv* env, const char* name) {
  jclass cls = env->FindClass(name);
  if (cls == nullptr) {
    env->ExceptionClear();
    throw Error(ErrorKind::Runtime, detail::concat("JNI: class ", name, " not found"));
  }
  return cls;
}

jmethodID method_id(JNIEnv* env, jclass cls, const names::Member& method) {
  jmethodID id = env->GetMethodID(cls, method.name, method.signature);
  if (id == nullptr) {
    env->ExceptionClear();
    throw Error(ErrorKind::Runtime, detail::concat("JNI: method ", method.name, method.signature, " not found"));
  }
  return id;
}

jfieldID field_id(JNIEnv* env, jclass cls, const names::Member& field) {
  jfieldID id = env->GetFieldID(cls, field.name, field.signature);
  if (id == nullptr) {
    env->ExceptionClear();
    throw Error(ErrorKind::Runtime, detail::concat("JNI: field ", field.name, " ", field.signature, " not found"));
  }
  return id;
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

namespace {
/** Writes t's metadata into slot[1..] and returns how many longs of the slot are used. */
size_t fill_slot(jlong* slot, const Tensor& t) {
  slot[0] = 0;
  if (!t.defined()) return 1;
  const size_t ndim = t.shape().size();
  const size_t sizes = std::min<size_t>(ndim, kResultSlot - kResultHeader);
  slot[1] = static_cast<jlong>(t.dtype());
  slot[2] = static_cast<jlong>(t.device().type);
  slot[3] = t.device().index;
  slot[4] = static_cast<jlong>(ndim);
  std::copy(t.shape().begin(), t.shape().begin() + static_cast<std::ptrdiff_t>(sizes), slot + kResultHeader);
  return kResultHeader + sizes;
}

void check_results(JNIEnv* env, jlongArray results, size_t outputs) {
  DDP4J_CHECK_ARG(outputs <= kMaxResults, "at most ", kMaxResults, " outputs fit the results buffer, got ", outputs);
  DDP4J_CHECK_ARG(results != nullptr && static_cast<size_t>(env->GetArrayLength(results)) >= outputs * kResultSlot,
                  "results buffer too small for ", outputs, " outputs");
}
}  // namespace

jlong result_of(JNIEnv* env, jlongArray results, Tensor t) {
  check_results(env, results, 1);
  jlong slot[kResultSlot];
  const size_t used = fill_slot(slot, t);
  slot[0] = handle_of(std::move(t));  // last: nothing above may throw once the tensor is on the heap
  env->SetLongArrayRegion(results, 0, static_cast<jsize>(used), slot);
  return slot[0];
}

void results_of(JNIEnv* env, jlongArray results, std::vector<Tensor> tensors) {
  const size_t n = tensors.size();
  check_results(env, results, n);
  jlong buf[kMaxResults * kResultSlot];
  size_t used = 0;
  for (size_t i = 0; i < n; i++) used = i * kResultSlot + fill_slot(buf + i * kResultSlot, tensors[i]);
  for (size_t i = 0; i < n; i++) buf[i * kResultSlot] = handle_of(std::move(tensors[i]));
  env->SetLongArrayRegion(results, 0, static_cast<jsize>(used), buf);
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
