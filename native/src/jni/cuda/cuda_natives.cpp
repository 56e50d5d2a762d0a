// JNI for org.ddp4j.internal.CudaNatives: device queries and synchronisation. Compiled into
// libddp4j_cuda.so, so these exist only once Java has loaded the CUDA library.
#include <jni.h>

#include "org_ddp4j_internal_CudaNatives.h"  // javac -h: the prototypes defined here

#include "cuda/cuda_context.h"
#include "jni/jni_util.h"

using namespace ddp4j;
using namespace ddp4j::jni;

extern "C" {

JNIEXPORT jint JNICALL Java_org_ddp4j_internal_CudaNatives_deviceCount(JNIEnv* env, jclass) {
  return guarded(env, [&] { return static_cast<jint>(cuda::device_count()); });
}

JNIEXPORT void JNICALL Java_org_ddp4j_internal_CudaNatives_checkDevice(JNIEnv* env, jclass, jint device) {
  guarded(env, [&] { cuda::check_device_index(device); });
}

JNIEXPORT void JNICALL Java_org_ddp4j_internal_CudaNatives_synchronize(JNIEnv* env, jclass, jint device) {
  guarded(env, [&] { cuda::synchronize(device); });
}

JNIEXPORT jstring JNICALL Java_org_ddp4j_internal_CudaNatives_deviceName(JNIEnv* env, jclass, jint device) {
  return guarded(env, [&]() -> jstring {
    cuda::check_device_index(device);
    cudaDeviceProp prop{};
    DDP4J_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
    return env->NewStringUTF(prop.name);
  });
}

JNIEXPORT jstring JNICALL Java_org_ddp4j_internal_CudaNatives_deviceUuid(JNIEnv* env, jclass, jint device) {
  return guarded(env, [&]() -> jstring {
    cuda::check_device_index(device);
    cudaDeviceProp prop{};
    DDP4J_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
    static const char* hex = "0123456789abcdef";
    std::string uuid = "GPU-";
    for (int i = 0; i < 16; ++i) {
      unsigned char b = static_cast<unsigned char>(prop.uuid.bytes[i]);
      uuid += hex[b >> 4];
      uuid += hex[b & 15];
      if (i == 3 || i == 5 || i == 7 || i == 9) uuid += '-';
    }
    return env->NewStringUTF(uuid.c_str());
  });
}

JNIEXPORT jlongArray JNICALL Java_org_ddp4j_internal_CudaNatives_memoryInfo(JNIEnv* env, jclass, jint device) {
  return guarded(env, [&]() -> jlongArray {
    cuda::check_device_index(device);
    cuda::DeviceGuard guard(device);
    size_t free_bytes = 0, total_bytes = 0;
    DDP4J_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
    jlong values[2] = {static_cast<jlong>(free_bytes), static_cast<jlong>(total_bytes)};
    jlongArray out = env->NewLongArray(2);
    if (out != nullptr) env->SetLongArrayRegion(out, 0, 2, values);
    return out;
  });
}

}  // extern "C"
