// tensor_checks.h: the argument checks of the Gloo group's collectives (a defined CPU tensor of any
// dtype: float32, int64, bfloat16, float16, bool; reductions: not bool, a known ReduceOp, AVG on
// the floating dtypes only).
#pragma once
#include "ddp4j/errors.h"
#include "ddp4j/process_group.h"
#include "ddp4j/tensor.h"

namespace ddp4j {
namespace gloo_detail {

inline void check_collective_tensor(const char* op, const char* what, const Tensor& t) {
  DDP4J_CHECK_ARG(t.defined(), op, ": the ", what, " tensor is missing");
  DDP4J_CHECK_ARG(t.device().type == DeviceType::CPU, op, ": the gloo backend works on CPU tensors, but the ", what,
                  " is ", t.describe(), "; move it with to(Device.CPU) or use the nccl backend for CUDA tensors");
  DDP4J_CHECK_ARG(static_cast<int>(t.dtype()) >= 0 && static_cast<int>(t.dtype()) < kNumDTypes, op, ": the ", what,
                  " has an unknown dtype ", static_cast<int>(t.dtype()));
}

/** The checks of every reduction (allReduce, reduce, reduceScatter) on the tensor it reduces. */
inline void check_reduction(const char* op, const char* what, const Tensor& t, ReduceOp reduce_op) {
  check_collective_tensor(op, what, t);
  DDP4J_CHECK_ARG(static_cast<int>(reduce_op) >= 0 && static_cast<int>(reduce_op) < kNumReduceOps, op,
                  ": unknown ReduceOp ", static_cast<int>(reduce_op));
  DDP4J_CHECK_ARG(t.dtype() != DType::Bool, op, ": the ", what, " is ", t.describe(),
                  "; bool tensors cannot be reduced: convert the mask to a number type first");
  DDP4J_CHECK_ARG(reduce_op != ReduceOp::AVG || t.dtype() != DType::Int64, op,
                  ": ReduceOp.AVG needs a floating tensor (float32, bfloat16 or float16), got ", t.describe(),
                  "; use SUM and divide by the world size");
}

}  // namespace gloo_detail
}  // namespace ddp4j
