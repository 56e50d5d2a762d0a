// jni_util.h: the rules every JNI entry point follows. guarded() runs the body and turns any C++
// exception into a pending Java exception (no C++ exception crosses JNI); tensors travel as jlong
// handles to heap-allocated ddp4j::Tensor objects owned by org.ddp4j.tensor.Tensor.
#pragma once
#include <jni.h>

#include <cstddef>
#include <exception>
#include <new>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "ddp4j/errors.h"
#include "ddp4j/tensor.h"
#include "jni/java_names.h"

namespace ddp4j::jni {

/** The JVM, saved by JNI_OnLoad, for native threads that call back into Java. */
JavaVM* java_vm();

/** Throws a Java exception of the class that matches kind (names in java_names.h). */
void throw_java(JNIEnv* env, ErrorKind kind, const char* message);

/**
 * Throws e as a Java exception: a distributed error as the typed exception that
 * org.ddp4j.distributed.NativeErrors makes from its kind, message and facts; any other as above.
 */
void throw_java(JNIEnv* env, const Error& e);

/**
 * The characters of a Java String, as JNI gives them (modified UTF-8: UTF-8 except for NUL and
 * characters outside the BMP). The one way JNI code reads a string. A null string reads as ""
 * (the Java side passes an unset optional string as null or ""). When the JVM cannot give the
 * characters (out of memory) it throws Error(OutOfMemory) naming `what` (e.g. "the hostname"),
 * with the JVM's pending error cleared, so guarded() reports a java.lang.OutOfMemoryError and a
 * native thread attached to the JVM is left without a pending exception.
 */
std::string string_of(JNIEnv* env, jstring s, const char* what = "a Java string");

/**
 * A class looked up by its binary name (java_names.h), as a local reference. Call on a Java
 * thread (JNI's FindClass uses the calling native method's class loader there). Throws
 * Error(Runtime) naming the class when the JVM has none of that name.
 */
jclass find_class(JNIEnv* env, const char* name);

/** An instance method of cls; throws Error(Runtime) naming the method when cls has none (a stale java_names.h). */
jmethodID method_id(JNIEnv* env, jclass cls, const names::Member& method);

/** An instance field of cls (any access); throws Error(Runtime) naming the field when cls has none (a stale java_names.h). */
jfieldID field_id(JNIEnv* env, jclass cls, const names::Member& field);

/**
 * JNI crossings made by this thread (org.ddp4j.internal.JniCalls.count()): guarded() counts each
 * entry. Thread-local, so counting costs no shared cache line.
 */
extern thread_local long long t_jni_calls;

/** Runs body; a C++ exception becomes a Java exception and the default value is returned. */
template <typename F>
auto guarded(JNIEnv* env, F&& body) -> decltype(body()) {
  using R = decltype(body());
  ++t_jni_calls;
  try {
    return body();
  } catch (const Error& e) {
    throw_java(env, e);
  } catch (const std::bad_alloc&) {
    throw_java(env, ErrorKind::OutOfMemory, "native allocation failed (std::bad_alloc)");
  } catch (const std::exception& e) {
    throw_java(env, ErrorKind::Runtime, e.what());
  } catch (...) {
    throw_java(env, ErrorKind::Runtime, "unknown native error");
  }
  if constexpr (!std::is_void_v<R>) return R{};
}

/** The tensor behind a handle; handle 0 gives an undefined tensor (an absent optional input). */
inline const Tensor& tensor_of(jlong handle) {
  static const Tensor undefined;
  return handle == 0 ? undefined : *reinterpret_cast<Tensor*>(handle);
}
inline Tensor& mutable_tensor_of(jlong handle) {
  DDP4J_CHECK_ARG(handle != 0, "a required tensor argument is missing");
  return *reinterpret_cast<Tensor*>(handle);
}

/** A required input: handle 0 throws IllegalArgumentException instead of reaching the op. */
inline const Tensor& required_tensor_of(jlong handle) { return mutable_tensor_of(handle); }

/** Moves t to the heap and returns its handle; 0 for an undefined tensor. */
inline jlong handle_of(Tensor t) { return t.defined() ? reinterpret_cast<jlong>(new Tensor(std::move(t))) : 0; }

/**
 * The results buffer (org.ddp4j.internal.NativeResults): ops return each new tensor's handle with
 * its metadata in one crossing, so Java never asks for it in a second one. Output i fills slot i,
 * kResultSlot longs: {handle, dtype, device type, device index, ndim, sizes...}; a tensor of more
 * than kResultSlot - kResultHeader dimensions leaves its sizes out (Java then asks meta()).
 */
constexpr std::size_t kResultHeader = 5;
constexpr std::size_t kResultSlot = 16;
constexpr std::size_t kMaxResults = 4;  // the buffer's slots; no op makes more outputs

/** Moves t to the heap, fills slot 0 of results and returns the handle (0 for an undefined t). */
jlong result_of(JNIEnv* env, jlongArray results, Tensor t);

/** Moves each tensor to the heap and fills slot i of results for tensor i (0 handles for undefined ones). */
void results_of(JNIEnv* env, jlongArray results, std::vector<Tensor> tensors);

/** The tensors behind a Java long[] of handles (copies sharing storage); a 0 handle throws. */
std::vector<Tensor> tensors_of(JNIEnv* env, jlongArray handles);

/** A Java long[] as a Shape. */
Shape shape_of(JNIEnv* env, jlongArray shape);

}  // namespace ddp4j::jni
