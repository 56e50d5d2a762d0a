// java_store.h: a gloo::rendezvous::Store that forwards to an org.ddp4j.internal.NativeStore object
// through JNI (the caller adapts its org.ddp4j.distributed.store.Store: TcpStore, FileStore,
// HashStore, PrefixStore), so Gloo's rendezvous runs over whatever store the Java side chose.
#pragma once
#include <jni.h>

#include <chrono>
#include <string>
#include <vector>

#include <gloo/rendezvous/store.h>

namespace ddp4j {

/**
 * Forwards set / get / wait to a Java NativeStore (class, methods and signatures in java_names.h).
 * Construct it on a Java thread (it resolves the classes through that thread's class loader); it
 * may then be used from any thread: a native thread is attached to the JVM as a daemon on first
 * use. A Java exception thrown by the store becomes a ddp4j::Error: kind Timeout for
 * DistributedTimeoutException, Distributed for anything else; a DistributedException keeps its
 * message, any other exception is named with its class ("Store.get(\"key\") failed: ...").
 */
class JavaStore : public gloo::rendezvous::Store {
 public:
  JavaStore(JNIEnv* env, jobject store);
  ~JavaStore() override;
  JavaStore(const JavaStore&) = delete;
  JavaStore& operator=(const JavaStore&) = delete;

  void set(const std::string& key, const std::vector<char>& data) override;
  /** Blocks up to the Java store's own timeout. */
  std::vector<char> get(const std::string& key) override;
  /** Blocks up to the Java store's own timeout. */
  void wait(const std::vector<std::string>& keys) override;
  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) override;

 private:
  jobject store_ = nullptr;         // global ref: the org.ddp4j.internal.NativeStore
  jclass timeout_class_ = nullptr;  // global ref: org.ddp4j.distributed.DistributedTimeoutException
  jclass dist_class_ = nullptr;     // global ref: org.ddp4j.distributed.DistributedException
  jclass string_class_ = nullptr;   // global ref: java.lang.String
  jmethodID set_ = nullptr;
  jmethodID get_ = nullptr;
  jmethodID wait_ = nullptr;          // waitFor(String[]): the store's own timeout
  jmethodID wait_timeout_ = nullptr;  // waitFor(String[], long ms)
  jmethodID get_message_ = nullptr;   // Throwable.getMessage()
  jmethodID to_string_ = nullptr;     // Throwable.toString()

  /** Turns a pending Java exception into a ddp4j::Error; `call` names the store call. */
  void rethrow_pending(JNIEnv* env, const std::string& call);
  /** The keys as a Java String[] (a local reference). */
  jobjectArray key_array(JNIEnv* env, const std::vector<std::string>& keys);
};

}  // namespace ddp4j
