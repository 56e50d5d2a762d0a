// tensor_util.h: building test tensors for the ctest executables in native/test.
#pragma once
#include <cstring>
#include <vector>

#include "ddp4j/tensor.h"

namespace ddp4j::test {
/** A new float32 CPU tensor of the given shape holding values (values.size() == numel). */
inline Tensor make(const Shape& shape, const std::vector<float>& values) {
  Tensor t = Tensor::empty(shape, DType::Float32);
  std::memcpy(t.data<float>(), values.data(), values.size() * sizeof(float));
  return t;
}
}  // namespace ddp4j::test
