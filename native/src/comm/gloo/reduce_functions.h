// reduce_functions.h: the element-wise reductions (SUM, PRODUCT, MIN, MAX) in the form Gloo's
// all-reduce takes them, shared by Gloo's ring and the small all-reduce; bfloat16 / float16 ones
// that compute in float32; and the division of AVG.
#pragma once
#include <gloo/allreduce.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "cpu/convert.h"
#include "ddp4j/tensor.h"

#include "ddp4j/errors.h"
#include "ddp4j/process_group.h"

namespace ddp4j {
namespace gloo_detail {

/** Element-wise c[i] = f(a[i], b[i]) for Gloo's reduction callback (a or b may alias c). */
template <typename T, typename F>
void reduce_into(void* c, const void* a, const void* b, size_t n) {
  T* out = static_cast<T*>(c);
  const T* x = static_cast<const T*>(a);
  const T* y = static_cast<const T*>(b);
  F f;
  for (size_t i = 0; i < n; i++) out[i] = f(x[i], y[i]);
}

struct Add {
  template <typename T>
  T operator()(T a, T b) const { return a + b; }
};
struct Mul {
  template <typename T>
  T operator()(T a, T b) const { return a * b; }
};
struct Min {
  template <typename T>
  T operator()(T a, T b) const { return b < a ? b : a; }
};
struct Max {
  template <typename T>
  T operator()(T a, T b) const { return b > a ? b : a; }
};

/**
 * c[i] = f(a[i], b[i]) on 16-bit floats (D: BFloat16 or Float16) computed in float32: both widened
 * exactly, combined, and the result rounded once to D. Gloo's ring calls it once per hop, so over
 * h hops a sum is rounded h times (see ring.h for the tolerance that gives).
 */
template <DType D, typename F>
void reduce_low_into(void* c, const void* a, const void* b, size_t n) {
  constexpr size_t kBlock = 512;
  float x[kBlock], y[kBlock];
  uint16_t* out = static_cast<uint16_t*>(c);
  const uint16_t* pa = static_cast<const uint16_t*>(a);
  const uint16_t* pb = static_cast<const uint16_t*>(b);
  F f;
  for (size_t at = 0; at < n; at += kBlock) {
    const size_t m = std::min(kBlock, n - at);
    cpu::widen_to_float(D, pa + at, x, static_cast<int64_t>(m));
    cpu::widen_to_float(D, pb + at, y, static_cast<int64_t>(m));
    for (size_t i = 0; i < m; i++) x[i] = f(x[i], y[i]);
    cpu::narrow_from_float(D, x, out + at, static_cast<int64_t>(m));
  }
}

template <DType D>
gloo::AllreduceOptions::Func reduce_low_function(ReduceOp op) {
  switch (op) {
    case ReduceOp::SUM:
    case ReduceOp::AVG: return &reduce_low_into<D, Add>;
    case ReduceOp::PRODUCT: return &reduce_low_into<D, Mul>;
    case ReduceOp::MIN: return &reduce_low_into<D, Min>;
    case ReduceOp::MAX: return &reduce_low_into<D, Max>;
  }
  throw Error(ErrorKind::InvalidArgument, "allReduce: unknown ReduceOp");
}

/**
 * In place: the first n elements of t (float32, bfloat16 or float16) times 1.0f / world, the
 * division of AVG after a SUM. 16-bit elements are widened, multiplied in float32, rounded once.
 */
inline void divide_by_world(const Tensor& t, size_t n, int world) {
  const float inv = 1.0f / static_cast<float>(world);
  if (t.dtype() == DType::Float32) {
    float* p = t.data<float>();
    for (size_t i = 0; i < n; i++) p[i] *= inv;
    return;
  }
  constexpr size_t kBlock = 512;
  float x[kBlock];
  uint16_t* p = static_cast<uint16_t*>(t.raw_data());
  for (size_t at = 0; at < n; at += kBlock) {
    const size_t m = std::min(kBlock, n - at);
    cpu::widen_to_float(t.dtype(), p + at, x, static_cast<int64_t>(m));
    for (size_t i = 0; i < m; i++) x[i] *= inv;
    cpu::narrow_from_float(t.dtype(), x, p + at, static_cast<int64_t>(m));
  }
}

/** The reduction of `op` on elements of type T (AVG reduces as SUM; the caller divides). */
template <typename T>
gloo::AllreduceOptions::Func reduce_function(ReduceOp op) {
  switch (op) {
    case ReduceOp::SUM:
    case ReduceOp::AVG: return &reduce_into<T, Add>;
    case ReduceOp::PRODUCT: return &reduce_into<T, Mul>;
    case ReduceOp::MIN: return &reduce_into<T, Min>;
    case ReduceOp::MAX: return &reduce_into<T, Max>;
  }
  throw Error(ErrorKind::InvalidArgument, "allReduce: unknown ReduceOp");
}

}  // namespace gloo_detail
}  // namespace ddp4j
