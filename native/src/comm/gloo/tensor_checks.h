// tensor_checks.h: the argument checks of the Gloo group's collectives (a defined CPU tensor of a
// supported dtype, float32 or int64: bfloat16 and float16 are refused by name; a known ReduceOp,
// AVG on float32 only).
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
  DDP4J_CHECK_ARG(t.dtype() == DType::Float32 || t.dtype() == DType::Int64, op, " of ", dtype_name(t.dtype()),
                  " is not supported yet (the ", what, " is ", t.describe(),
                  "; collectives take float32 and int64): convert with tensor.to(DType.FLOAT32)");
}

/** The checks of every reduction (allReduce, reduce, reduceScatter) on the tensor it reduces. */
inline void check_reduction(const char* op, const char* what, const Tensor& t, ReduceOp reduce_op) {
  check_collective_tensor(op, what, t);
  DDP4J_CHECK_ARG(static_cast<int>(reduce_op) >= 0 && static_cast<int>(reduce_op) < kNumReduceOps, op,
                  ": unknown ReduceOp ", static_cast<int>(reduce_op));
  DDP4J_CHECK_ARG(reduce_op != ReduceOp::AVG || t.dtype() == DType::Float32, op,
                  ": ReduceOp.AVG needs a float32 tensor, got ", t.describe(), "; use SUM and divide by the world size");
}

}  // namespace gloo_detail
}  // namespace ddp4j
