// java_names.h: every Java class, method and field that the C++ side looks up by name, in one
// place. The natives' own signatures are checked by the compiler (the javac -h headers); these
// names are not: a Java rename must change its entry here, or the lookup fails at run time with a
// RuntimeException naming the entry (every Gloo group creation reads GlooGroupOptions' fields and
// NativeStore's methods; ProcessGroupGlooTest also sends store exceptions through).
// Class names are JNI's binary names ("java/lang/String"); signatures are JNI type signatures.
#pragma once

namespace ddp4j::jni::names {

/** A method or field looked up by name: its name and JNI type signature. */
struct Member {
  const char* name;
  const char* signature;
};

// ---- Exceptions thrown from C++ (throw_java, one per ErrorKind) and recognized in callbacks ----
inline constexpr const char* kIllegalArgumentException = "java/lang/IllegalArgumentException";
inline constexpr const char* kIllegalStateException = "java/lang/IllegalStateException";
inline constexpr const char* kRuntimeException = "java/lang/RuntimeException";
inline constexpr const char* kOutOfMemoryError = "java/lang/OutOfMemoryError";
inline constexpr const char* kDistributedException = "org/ddp4j/distributed/DistributedException";
inline constexpr const char* kDistributedTimeoutException = "org/ddp4j/distributed/DistributedTimeoutException";
/** Makes the typed exception of a distributed error from its kind, message and facts (jni_util.cpp). */
inline constexpr const char* kNativeErrors = "org/ddp4j/distributed/NativeErrors";
inline constexpr Member kNativeErrorsCreate{"create", "(ILjava/lang/String;[J[Ljava/lang/String;)Ljava/lang/Throwable;"};

// ---- java.lang ----
inline constexpr const char* kString = "java/lang/String";
inline constexpr const char* kThrowable = "java/lang/Throwable";
inline constexpr Member kThrowableGetMessage{"getMessage", "()Ljava/lang/String;"};
inline constexpr Member kThrowableToString{"toString", "()Ljava/lang/String;"};

// ---- org.ddp4j.internal.NativeStore: the rendezvous store a Gloo group calls (java_store.cpp) ----
inline constexpr const char* kNativeStore = "org/ddp4j/internal/NativeStore";
inline constexpr Member kNativeStoreSet{"set", "(Ljava/lang/String;[B)V"};
inline constexpr Member kNativeStoreGet{"get", "(Ljava/lang/String;)[B"};
inline constexpr Member kNativeStoreWaitFor{"waitFor", "([Ljava/lang/String;)V"};               // own timeout
inline constexpr Member kNativeStoreWaitForTimeout{"waitFor", "([Ljava/lang/String;J)V"};       // timeout in ms

// ---- org.ddp4j.internal.GlooGroupOptions: a Gloo group's settings, read field by field (gloo_natives.cpp) ----
inline constexpr const char* kGlooGroupOptions = "org/ddp4j/internal/GlooGroupOptions";
inline constexpr Member kGlooTimeoutMs{"timeoutMs", "J"};
inline constexpr Member kGlooHostname{"hostname", "Ljava/lang/String;"};
inline constexpr Member kGlooSocketIfname{"socketIfname", "Ljava/lang/String;"};
inline constexpr Member kGlooCheckCollectives{"checkCollectives", "Z"};
inline constexpr Member kGlooSmallAllReduceBytes{"smallAllReduceBytes", "J"};
inline constexpr Member kGlooSmallAllReduceSyncReads{"smallAllReduceSyncReads", "Z"};
inline constexpr Member kGlooShm{"shm", "Z"};
inline constexpr Member kGlooShmHostId{"shmHostId", "Ljava/lang/String;"};

}  // namespace ddp4j::jni::names
