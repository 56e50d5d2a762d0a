// java_store.h: a gloo::rendezvous::Store that forwards to an org.ddp4j.distributed.store.Store object
// through JNI, so Gloo's rendezvous runs over whatever store the Java side chose (TcpStore,
// FileStore, HashStore, PrefixStore).
#pragma once
#include <jni.h>

#include <chrono>
#include <string>
#include <vector>

#include <gloo/rendezvous/store.h>

namespace ddp4j {

/**
 * Forwards set / get / wait to a Java Store. Construct it on a Java thread (it resolves the Store
 * interface through that thread's class loader); it may then be used from any thread: a native
 * thread is attached to the JVM as a daemon on first use. A Java exception thrown by the store
 * becomes a ddp4j::Error carrying the Java message: kind Timeout for DistributedTimeoutException,
 * Distributed for anything else.
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
  jobject store_ = nullptr;          // global ref
  jclass timeout_class_ = nullptr;   // global ref: org.ddp4j.distributed.DistributedTimeoutException
  jclass dist_class_ = nullptr;      // global ref: org.ddp4j.distributed.DistributedException
  jclass arrays_class_ = nullptr;    // global ref: java.util.Arrays
  jclass string_class_ = nullptr;    // global ref: java.lang.String
  jclass duration_class_ = nullptr;  // global ref: java.time.Duration
  jmethodID set_ = nullptr;
  jmethodID get_ = nullptr;
  jmethodID wait_ = nullptr;           // waitFor(List)
  jmethodID wait_timeout_ = nullptr;   // waitFor(List, Duration)
  jmethodID as_list_ = nullptr;        // Arrays.asList(Object[])
  jmethodID of_millis_ = nullptr;      // Duration.ofMillis(long)
  jmethodID get_message_ = nullptr;    // Throwable.getMessage()
  jmethodID to_string_ = nullptr;      // Object.toString()

  /** Turns a pending Java exception into a ddp4j::Error; `call` names the store call. */
  void rethrow_pending(JNIEnv* env, const std::string& call);
  jobject key_list(JNIEnv* env, const std::vector<std::string>& keys);
};

}  // namespace ddp4j
