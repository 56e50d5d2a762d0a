// JNI for org.ddp4j.internal.TensorNatives: creating, viewing, copying and freeing tensors.
#include <jni.h>

#include "org_ddp4j_internal_TensorNatives.h"  // javac -h: the prototypes defined here

#include <cstring>

#include "ddp4j/allocator.h"
#include "ddp4j/ops.h"
#include "jni/jni_util.h"

using namespace ddp4j;
using namespace ddp4j::jni;

namespace {
Device device_of(jint type, jint index) { return Device{static_cast<DeviceType>(type), index}; }

/** Throws unless length values from offset can fill t. */
void check_region(const char* op, jsize length, jint offset, const Tensor& t) {
  DDP4J_CHECK_ARG(offset >= 0 && offset + t.numel() <= length, op, ": ", length, " values (from offset ", offset,
                  ") cannot fill shape ", shape_str(t.shape()));
}

}  // namespace

extern "C" {

JNIEXPORT jlong JNICALL Java_org_ddp4j_internal_TensorNatives_empty(JNIEnv* env, jclass, jlongArray shape, jint dtype,
                                                                    jint devType, jint devIndex, jlongArray results) {
  return guarded(env, [&] {
    return result_of(env, results,
        Tensor::empty(shape_of(env, shape), static_cast<DType>(dtype), device_of(devType, devIndex)));
  });
}

JNIEXPORT jlong JNICALL Java_org_ddp4j_internal_TensorNatives_full(JNIEnv* env, jclass, jlongArray shape, jint dtype,
                                                                   jint devType, jint devIndex, jdouble value,
                                                                   jlongArray results) {
  return guarded(env, [&] {
    Tensor t = Tensor::empty(shape_of(env, shape), static_cast<DType>(dtype), device_of(devType, devIndex));
    ops::fill_(t, value);
    return result_of(env, results, std::move(t));
  });
}

JNIEXPORT jlong JNICALL Java_org_ddp4j_internal_TensorNatives_fromFloats(JNIEnv* env, jclass, jfloatArray data,
                                                                         jint offset, jlongArray shape,
                                                                         jlongArray results) {
  return guarded(env, [&] {
    Tensor t = Tensor::empty(shape_of(env, shape), DType::Float32);
    check_region("fromFloats", env->GetArrayLength(data), offset, t);
    env->GetFloatArrayRegion(data, offset, static_cast<jsize>(t.numel()), t.data<float>());
    return result_of(env, results, std::move(t));
  });
}

JNIEXPORT jlong JNICALL Java_org_ddp4j_internal_TensorNatives_fromLongs(JNIEnv* env, jclass, jlongArray data,
                                                                        jint offset, jlongArray shape,
                                                                        jlongArray results) {
  return guarded(env, [&] {
    Tensor t = Tensor::empty(shape_of(env, shape), DType::Int64);
    check_region("fromLongs", env->GetArrayLength(data), offset, t);
    env->GetLongArrayRegion(data, offset, static_cast<jsize>(t.numel()), reinterpret_cast<jlong*>(t.data<int64_t>()));
    return result_of(env, results, std::move(t));
  });
}

JNIEXPORT jlong JNICALL Java_org_ddp4j_internal_TensorNatives_fromBooleans(JNIEnv* env, jclass, jbooleanArray data,
                                                                           jlongArray shape, jlongArray results) {
  return guarded(env, [&] {
    Tensor t = Tensor::empty(shape_of(env, shape), DType::Bool);
    check_region("ofBooleans", env->GetArrayLength(data), 0, t);
    // jboolean is an unsigned char holding 0 or 1 (JNI_FALSE / JNI_TRUE): torch.bool's bytes.
    env->GetBooleanArrayRegion(data, 0, static_cast<jsize>(t.numel()), reinterpret_cast<jboolean*>(t.data<uint8_t>()));
    return result_of(env, results, std::move(t));
  });
}

JNIEXPORT void JNICALL Java_org_ddp4j_internal_TensorNatives_toBooleans(JNIEnv* env, jclass, jlong h,
                                                                        jbooleanArray out) {
  guarded(env, [&] {
    ops::check_dtype("toBooleanArray", "tensor", tensor_of(h), DType::Bool);
    Tensor t = ops::to_device(tensor_of(h), Device{});  // a GPU tensor is copied to the host first
    DDP4J_CHECK_ARG(env->GetArrayLength(out) >= t.numel(), "toBooleanArray: array too small");
    env->SetBooleanArrayRegion(out, 0, static_cast<jsize>(t.numel()), reinterpret_cast<const jboolean*>(t.data<uint8_t>()));
  });
}

JNIEXPORT jlong JNICALL Java_org_ddp4j_internal_TensorNatives_fromBits(JNIEnv* env, jclass, jshortArray data,
                                                                       jint offset, jlongArray shape, jint dtype,
                                                                       jlongArray results) {
  return guarded(env, [&] {
    const DType d = static_cast<DType>(dtype);
    DDP4J_CHECK_ARG(is_reduced_float(d), "ofBits: bit patterns make bfloat16 or float16 tensors, not ",
                    dtype_name(d));
    Tensor t = Tensor::empty(shape_of(env, shape), d);
    check_region("ofBits", env->GetArrayLength(data), offset, t);
    env->GetShortArrayRegion(data, offset, static_cast<jsize>(t.numel()), reinterpret_cast<jshort*>(t.data<uint16_t>()));
    return result_of(env, results, std::move(t));
  });
}

JNIEXPORT void JNICALL Java_org_ddp4j_internal_TensorNatives_toBits(JNIEnv* env, jclass, jlong h, jshortArray out) {
  guarded(env, [&] {
    const Tensor& src = tensor_of(h);
    DDP4J_CHECK_ARG(is_reduced_float(src.dtype()), "toBitsArray: the tensor is ", src.describe(),
                    "; bit patterns are for bfloat16 and float16 (use toFloatArray() or toLongArray())");
    Tensor t = ops::to_device(src, Device{});  // a GPU tensor is copied to the host first
    DDP4J_CHECK_ARG(env->GetArrayLength(out) >= t.numel(), "toBitsArray: array too small");
    env->SetShortArrayRegion(out, 0, static_cast<jsize>(t.numel()), reinterpret_cast<const jshort*>(t.data<uint16_t>()));
  });
}

JNIEXPORT void JNICALL Java_org_ddp4j_internal_TensorNatives_toFloats(JNIEnv* env, jclass, jlong h, jfloatArray out) {
  guarded(env, [&] {
    const Tensor& src = tensor_of(h);
    DDP4J_CHECK_ARG(src.dtype() != DType::Int64 && src.dtype() != DType::Bool, "toFloatArray: the tensor is ",
                    src.describe(), "; use toLongArray() for int64, toBooleanArray() for bool");
    // A GPU tensor is copied to the host first; a 16-bit one is widened (exactly) to float32.
    Tensor t = ops::to_dtype(ops::to_device(src, Device{}), DType::Float32);
    DDP4J_CHECK_ARG(env->GetArrayLength(out) >= t.numel(), "toFloatArray: array too small");
    env->SetFloatArrayRegion(out, 0, static_cast<jsize>(t.numel()), t.data<float>());
  });
}

JNIEXPORT void JNICALL Java_org_ddp4j_internal_TensorNatives_toLongs(JNIEnv* env, jclass, jlong h, jlongArray out) {
  guarded(env, [&] {
    ops::check_dtype("toLongArray", "tensor", tensor_of(h), DType::Int64);
    Tensor t = ops::to_device(tensor_of(h), Device{});  // a GPU tensor is copied to the host first
    DDP4J_CHECK_ARG(env->GetArrayLength(out) >= t.numel(), "toLongArray: array too small");
    env->SetLongArrayRegion(out, 0, static_cast<jsize>(t.numel()), reinterpret_cast<jlong*>(t.data<int64_t>()));
  });
}

JNIEXPORT jlong JNICALL Java_org_ddp4j_internal_TensorNatives_toDevice(JNIEnv* env, jclass, jlong h, jint devType,
                                                                       jint devIndex, jlongArray results) {
  return guarded(env, [&] { return result_of(env, results,
      ops::to_device(tensor_of(h), device_of(devType, devIndex))); });
}

JNIEXPORT jlong JNICALL Java_org_ddp4j_internal_TensorNatives_toDType(JNIEnv* env, jclass, jlong h, jint dtype,
                                                                      jlongArray results) {
  return guarded(env, [&] { return result_of(env, results, ops::to_dtype(tensor_of(h), static_cast<DType>(dtype))); });
}

JNIEXPORT jlong JNICALL Java_org_ddp4j_internal_TensorNatives_view(JNIEnv* env, jclass, jlong h, jlongArray shape,
                                                                   jlongArray results) {
  return guarded(env, [&] { return result_of(env, results, tensor_of(h).view(shape_of(env, shape))); });
}

JNIEXPORT jlong JNICALL Java_org_ddp4j_internal_TensorNatives_flatSlice(JNIEnv* env, jclass, jlong h, jlong offset,
                                                                        jlongArray shape, jlongArray results) {
  return guarded(env, [&] { return result_of(env, results, tensor_of(h).flat_slice(offset, shape_of(env, shape))); });
}

JNIEXPORT jlong JNICALL Java_org_ddp4j_internal_TensorNatives_cloneTensor(JNIEnv* env, jclass, jlong h,
                                                                          jlongArray results) {
  return guarded(env, [&] {
    const Tensor& src = tensor_of(h);
    Tensor dst = Tensor::empty(src.shape(), src.dtype(), src.device());
    ops::copy_(src, dst);
    return result_of(env, results, std::move(dst));
  });
}

JNIEXPORT void JNICALL Java_org_ddp4j_internal_TensorNatives_copyInto(JNIEnv* env, jclass, jlong src, jlong dst) {
  guarded(env, [&] { ops::copy_(tensor_of(src), mutable_tensor_of(dst)); });
}

JNIEXPORT void JNICALL Java_org_ddp4j_internal_TensorNatives_flattenInto(JNIEnv* env, jclass, jlongArray sources,
                                                                          jlong flat) {
  guarded(env, [&] { ops::flatten_into(tensors_of(env, sources), mutable_tensor_of(flat)); });
}

JNIEXPORT void JNICALL Java_org_ddp4j_internal_TensorNatives_unflattenFrom(JNIEnv* env, jclass, jlong flat,
                                                                            jlongArray destinations) {
  guarded(env, [&] {
    std::vector<Tensor> dsts = tensors_of(env, destinations);  // share storage with the Java tensors
    ops::unflatten_from(required_tensor_of(flat), dsts);
  });
}

JNIEXPORT void JNICALL Java_org_ddp4j_internal_TensorNatives_fill(JNIEnv* env, jclass, jlong h, jdouble value) {
  guarded(env, [&] { ops::fill_(mutable_tensor_of(h), value); });
}

JNIEXPORT void JNICALL Java_org_ddp4j_internal_TensorNatives_free(JNIEnv* env, jclass, jlong h) {
  guarded(env, [&] { delete reinterpret_cast<Tensor*>(h); });  // guarded so that frees count as crossings
}

JNIEXPORT jlongArray JNICALL Java_org_ddp4j_internal_TensorNatives_meta(JNIEnv* env, jclass, jlong h) {
  return guarded(env, [&]() -> jlongArray {
    const Tensor& t = tensor_of(h);
    std::vector<jlong> meta = {static_cast<jlong>(t.dtype()), static_cast<jlong>(t.device().type), t.device().index};
    meta.insert(meta.end(), t.shape().begin(), t.shape().end());
    jlongArray out = env->NewLongArray(static_cast<jsize>(meta.size()));
    if (out != nullptr) env->SetLongArrayRegion(out, 0, static_cast<jsize>(meta.size()), meta.data());
    return out;
  });
}

JNIEXPORT jlong JNICALL Java_org_ddp4j_internal_TensorNatives_bytesInUse(JNIEnv*, jclass, jint devType) {
  return native_bytes_in_use(static_cast<DeviceType>(devType));
}

JNIEXPORT jlong JNICALL Java_org_ddp4j_internal_TensorNatives_cpuBytesNetOnThisThread(JNIEnv*, jclass) {
  return cpu_bytes_net_on_this_thread();
}

JNIEXPORT jlong JNICALL Java_org_ddp4j_internal_TensorNatives_allocationCount(JNIEnv*, jclass, jint devType) {
  return native_allocation_count(static_cast<DeviceType>(devType));
}

JNIEXPORT jlong JNICALL Java_org_ddp4j_internal_TensorNatives_bytesCached(JNIEnv*, jclass, jint devType) {
  return native_bytes_cached(static_cast<DeviceType>(devType));
}

JNIEXPORT void JNICALL Java_org_ddp4j_internal_TensorNatives_emptyCache(JNIEnv* env, jclass, jint devType) {
  guarded(env, [&] { native_empty_cache(static_cast<DeviceType>(devType)); });
}

JNIEXPORT jlong JNICALL Java_org_ddp4j_internal_TensorNatives_cacheLimit(JNIEnv* env, jclass, jint devType) {
  return guarded(env, [&] { return static_cast<jlong>(get_allocator(static_cast<DeviceType>(devType)).cache_limit()); });
}

JNIEXPORT void JNICALL Java_org_ddp4j_internal_TensorNatives_setCacheLimit(JNIEnv* env, jclass, jint devType,
                                                                           jlong bytes) {
  guarded(env, [&] { get_allocator(static_cast<DeviceType>(devType)).set_cache_limit(bytes); });
}

JNIEXPORT jlong JNICALL Java_org_ddp4j_internal_TensorNatives_dataAddress(JNIEnv* env, jclass, jlong h) {
  return guarded(env, [&] { return reinterpret_cast<jlong>(tensor_of(h).raw_data()); });
}

}  // extern "C"
