// reduce_functions.h: the element-wise reductions (SUM, PRODUCT, MIN, MAX) in the form Gloo's
// all-reduce takes them, shared by Gloo's ring and the small all-reduce.
#pragma once
#include <gloo/allreduce.h>

#include <cstddef>

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
