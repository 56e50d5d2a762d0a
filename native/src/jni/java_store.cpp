// The JNI bridge from Gloo's rendezvous to a Java Store (see java_store.h).
#include "jni/java_store.h"

#include "ddp4j/errors.h"
#include "jni/jni_util.h"

namespace ddp4j {
namespace {

/** The JNIEnv of the calling thread, attaching it (as a daemon, so it never blocks JVM exit) if needed. */
JNIEnv* current_env() {
  JavaVM* vm = jni::java_vm();
  DDP4J_CHECK(vm != nullptr, IllegalState, "the JVM is not known (libddp4j was not loaded through System.load)");
  JNIEnv* env = nullptr;
  jint rc = vm->GetEnv(reinterpret_cast<void**>(&env), JNI_VERSION_1_8);
  if (rc == JNI_EDETACHED) {
    JavaVMAttachArgs args{JNI_VERSION_1_8, const_cast<char*>("ddp4j-gloo-store"), nullptr};
    rc = vm->AttachCurrentThreadAsDaemon(reinterpret_cast<void**>(&env), &args);
  }
  DDP4J_CHECK(rc == JNI_OK && env != nullptr, Runtime, "cannot attach a native thread to the JVM (error ", rc, ")");
  return env;
}

/** Local references made in a scope are freed at its end, even on an attached native thread that never returns to Java. */
class LocalFrame {
 public:
  explicit LocalFrame(JNIEnv* env, jint capacity = 16) : env_(env) {
    if (env_->PushLocalFrame(capacity) != 0) {
      env_->ExceptionClear();
      throw Error(ErrorKind::OutOfMemory, "cannot allocate JNI local references");
    }
  }
  ~LocalFrame() { env_->PopLocalFrame(nullptr); }
  LocalFrame(const LocalFrame&) = delete;
  LocalFrame& operator=(const LocalFrame&) = delete;

 private:
  JNIEnv* env_;
};

jclass global_class(JNIEnv* env, const char* name) {
  jclass local = env->FindClass(name);
  if (local == nullptr) {
    env->ExceptionClear();
    throw Error(ErrorKind::Runtime, detail::concat("JNI: class ", name, " not found"));
  }
  auto global = static_cast<jclass>(env->NewGlobalRef(local));
  env->DeleteLocalRef(local);
  return global;
}

jmethodID method(JNIEnv* env, jclass cls, const char* name, const char* sig, bool is_static = false) {
  jmethodID id = is_static ? env->GetStaticMethodID(cls, name, sig) : env->GetMethodID(cls, name, sig);
  if (id == nullptr) {
    env->ExceptionClear();
    throw Error(ErrorKind::Runtime, detail::concat("JNI: method ", name, sig, " not found"));
  }
  return id;
}

std::string java_string(JNIEnv* env, jstring s) {
  if (s == nullptr) return std::string();
  const char* chars = env->GetStringUTFChars(s, nullptr);
  if (chars == nullptr) {
    env->ExceptionClear();
    return std::string();
  }
  std::string out(chars);
  env->ReleaseStringUTFChars(s, chars);
  return out;
}

std::string quote(const std::string& key) { return "\"" + key + "\""; }

}  // namespace

JavaStore::JavaStore(JNIEnv* env, jobject store) {
  DDP4J_CHECK_ARG(store != nullptr, "the store is null");
  try {
    jclass store_class = global_class(env, "org/ddp4j/distributed/store/Store");
    set_ = method(env, store_class, "set", "(Ljava/lang/String;[B)V");
    get_ = method(env, store_class, "get", "(Ljava/lang/String;)[B");
    wait_ = method(env, store_class, "waitFor", "(Ljava/util/List;)V");
    wait_timeout_ = method(env, store_class, "waitFor", "(Ljava/util/List;Ljava/time/Duration;)V");
    env->DeleteGlobalRef(store_class);
    timeout_class_ = global_class(env, "org/ddp4j/distributed/DistributedTimeoutException");
    dist_class_ = global_class(env, "org/ddp4j/distributed/DistributedException");
    arrays_class_ = global_class(env, "java/util/Arrays");
    as_list_ = method(env, arrays_class_, "asList", "([Ljava/lang/Object;)Ljava/util/List;", true);
    string_class_ = global_class(env, "java/lang/String");
    duration_class_ = global_class(env, "java/time/Duration");
    of_millis_ = method(env, duration_class_, "ofMillis", "(J)Ljava/time/Duration;", true);
    jclass throwable = env->FindClass("java/lang/Throwable");
    get_message_ = method(env, throwable, "getMessage", "()Ljava/lang/String;");
    to_string_ = method(env, throwable, "toString", "()Ljava/lang/String;");
    env->DeleteLocalRef(throwable);
    store_ = env->NewGlobalRef(store);
  } catch (...) {
    for (jobject ref : {static_cast<jobject>(timeout_class_), static_cast<jobject>(dist_class_),
                        static_cast<jobject>(arrays_class_), static_cast<jobject>(string_class_),
                        static_cast<jobject>(duration_class_)}) {
      if (ref != nullptr) env->DeleteGlobalRef(ref);
    }
    throw;
  }
}

JavaStore::~JavaStore() {
  try {
    JNIEnv* env = current_env();
    for (jobject ref : {store_, static_cast<jobject>(timeout_class_), static_cast<jobject>(dist_class_),
                        static_cast<jobject>(arrays_class_), static_cast<jobject>(string_class_),
                        static_cast<jobject>(duration_class_)}) {
      if (ref != nullptr) env->DeleteGlobalRef(ref);
    }
  } catch (...) {
    // No JVM to give the references back to: nothing to free.
  }
}

void JavaStore::rethrow_pending(JNIEnv* env, const std::string& call) {
  jthrowable ex = env->ExceptionOccurred();
  if (ex == nullptr) return;
  env->ExceptionClear();
  const bool timeout = env->IsInstanceOf(ex, timeout_class_);
  const bool distributed = env->IsInstanceOf(ex, dist_class_);
  std::string message;
  {
    // Distributed exceptions carry a message meant for the user; others are shown with their class name.
    auto text = static_cast<jstring>(env->CallObjectMethod(ex, distributed ? get_message_ : to_string_));
    if (env->ExceptionCheck()) env->ExceptionClear();
    message = java_string(env, text);
  }
  env->DeleteLocalRef(ex);
  if (message.empty()) message = "unknown Java exception";
  if (!distributed) message = "Store." + call + " failed: " + message;
  throw Error(timeout ? ErrorKind::Timeout : ErrorKind::Distributed, message);
}

jobject JavaStore::key_list(JNIEnv* env, const std::vector<std::string>& keys) {
  jobjectArray array = env->NewObjectArray(static_cast<jsize>(keys.size()), string_class_, nullptr);
  if (array == nullptr) rethrow_pending(env, "waitFor");
  for (size_t i = 0; i < keys.size(); i++) {
    jstring k = env->NewStringUTF(keys[i].c_str());
    if (k == nullptr) rethrow_pending(env, "waitFor");
    env->SetObjectArrayElement(array, static_cast<jsize>(i), k);
    env->DeleteLocalRef(k);
  }
  jobject list = env->CallStaticObjectMethod(arrays_class_, as_list_, array);
  rethrow_pending(env, "waitFor");
  return list;
}

void JavaStore::set(const std::string& key, const std::vector<char>& data) {
  JNIEnv* env = current_env();
  LocalFrame frame(env);
  jstring k = env->NewStringUTF(key.c_str());
  if (k == nullptr) rethrow_pending(env, "set(" + quote(key) + ")");
  jbyteArray value = env->NewByteArray(static_cast<jsize>(data.size()));
  if (value == nullptr) rethrow_pending(env, "set(" + quote(key) + ")");
  env->SetByteArrayRegion(value, 0, static_cast<jsize>(data.size()), reinterpret_cast<const jbyte*>(data.data()));
  env->CallVoidMethod(store_, set_, k, value);
  rethrow_pending(env, "set(" + quote(key) + ")");
}

std::vector<char> JavaStore::get(const std::string& key) {
  JNIEnv* env = current_env();
  LocalFrame frame(env);
  jstring k = env->NewStringUTF(key.c_str());
  if (k == nullptr) rethrow_pending(env, "get(" + quote(key) + ")");
  auto value = static_cast<jbyteArray>(env->CallObjectMethod(store_, get_, k));
  rethrow_pending(env, "get(" + quote(key) + ")");
  DDP4J_CHECK(value != nullptr, Distributed, "Store.get(", quote(key), ") returned null");
  std::vector<char> out(static_cast<size_t>(env->GetArrayLength(value)));
  env->GetByteArrayRegion(value, 0, static_cast<jsize>(out.size()), reinterpret_cast<jbyte*>(out.data()));
  return out;
}

void JavaStore::wait(const std::vector<std::string>& keys) {
  JNIEnv* env = current_env();
  LocalFrame frame(env);
  jobject list = key_list(env, keys);
  env->CallVoidMethod(store_, wait_, list);
  rethrow_pending(env, "waitFor");
}

void JavaStore::wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) {
  JNIEnv* env = current_env();
  LocalFrame frame(env);
  jobject list = key_list(env, keys);
  jobject duration = env->CallStaticObjectMethod(duration_class_, of_millis_, static_cast<jlong>(timeout.count()));
  rethrow_pending(env, "waitFor");
  env->CallVoidMethod(store_, wait_timeout_, list, duration);
  rethrow_pending(env, "waitFor");
}

}  // namespace ddp4j
