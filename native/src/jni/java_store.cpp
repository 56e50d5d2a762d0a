// The JNI bridge from Gloo's rendezvous to a Java NativeStore (see java_store.h).
#include "jni/java_store.h"

#include "ddp4j/errors.h"
#include "jni/jni_util.h"

namespace ddp4j {
namespace names = jni::names;
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

/** A class (java_names.h) as a global reference, which outlives the call: JavaStore keeps it. */
jclass global_class(JNIEnv* env, const char* name) {
  jclass local = jni::find_class(env, name);
  auto global = static_cast<jclass>(env->NewGlobalRef(local));
  env->DeleteLocalRef(local);
  DDP4J_CHECK(global != nullptr, OutOfMemory, "JNI: cannot make a global reference to ", name);
  return global;
}

std::string quote(const std::string& key) { return "\"" + key + "\""; }

}  // namespace

JavaStore::JavaStore(JNIEnv* env, jobject store) {
  DDP4J_CHECK_ARG(store != nullptr, "the store is null");
  try {
    jclass store_class = jni::find_class(env, names::kNativeStore);
    set_ = jni::method_id(env, store_class, names::kNativeStoreSet);
    get_ = jni::method_id(env, store_class, names::kNativeStoreGet);
    wait_ = jni::method_id(env, store_class, names::kNativeStoreWaitFor);
    wait_timeout_ = jni::method_id(env, store_class, names::kNativeStoreWaitForTimeout);
    env->DeleteLocalRef(store_class);
    timeout_class_ = global_class(env, names::kDistributedTimeoutException);
    dist_class_ = global_class(env, names::kDistributedException);
    string_class_ = global_class(env, names::kString);
    jclass throwable = jni::find_class(env, names::kThrowable);
    get_message_ = jni::method_id(env, throwable, names::kThrowableGetMessage);
    to_string_ = jni::method_id(env, throwable, names::kThrowableToString);
    env->DeleteLocalRef(throwable);
    store_ = env->NewGlobalRef(store);
  } catch (...) {
    for (jobject ref : {static_cast<jobject>(timeout_class_), static_cast<jobject>(dist_class_),
                        static_cast<jobject>(string_class_)}) {
      if (ref != nullptr) env->DeleteGlobalRef(ref);
    }
    throw;
  }
}

JavaStore::~JavaStore() {
  try {
    JNIEnv* env = current_env();
    for (jobject ref : {store_, static_cast<jobject>(timeout_class_), static_cast<jobject>(dist_class_),
                        static_cast<jobject>(string_class_)}) {
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
    message = jni::string_of(env, text, "a store exception's message");
  }
  env->DeleteLocalRef(ex);
  if (message.empty()) message = "unknown Java exception";
  if (!distributed) message = "Store." + call + " failed: " + message;
  ErrorFacts facts;
  facts.op = "Store." + call;
  facts.transport = "store";
  throw Error(timeout ? ErrorKind::Timeout : ErrorKind::Distributed, message, std::move(facts));
}

jobjectArray JavaStore::key_array(JNIEnv* env, const std::vector<std::string>& keys) {
  jobjectArray array = env->NewObjectArray(static_cast<jsize>(keys.size()), string_class_, nullptr);
  if (array == nullptr) rethrow_pending(env, "waitFor");
  for (size_t i = 0; i < keys.size(); i++) {
    jstring k = env->NewStringUTF(keys[i].c_str());
    if (k == nullptr) rethrow_pending(env, "waitFor");
    env->SetObjectArrayElement(array, static_cast<jsize>(i), k);
    env->DeleteLocalRef(k);
  }
  return array;
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
  jobjectArray array = key_array(env, keys);
  env->CallVoidMethod(store_, wait_, array);
  rethrow_pending(env, "waitFor");
}

void JavaStore::wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) {
  JNIEnv* env = current_env();
  LocalFrame frame(env);
  jobjectArray array = key_array(env, keys);
  env->CallVoidMethod(store_, wait_timeout_, array, static_cast<jlong>(timeout.count()));
  rethrow_pending(env, "waitFor");
}

}  // namespace ddp4j
