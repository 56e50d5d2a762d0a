// broadcast.h: PyTorch's broadcasting rules, shared by the ops layer (shape checks) and the CPU
// kernels (index arithmetic): sizes align from the right, a missing or size-1 dimension stretches.
#pragma once
#include <cstdint>
#include <vector>

#include "ddp4j/errors.h"
#include "ddp4j/tensor.h"

namespace ddp4j {

/** The broadcast shape of a and b, or an InvalidArgument naming op and both shapes. torch.broadcast_shapes. */
inline Shape broadcast_shapes(const char* op, const Shape& a, const Shape& b) {
  const size_t n = a.size() > b.size() ? a.size() : b.size();
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    const int64_t sa = i < n - a.size() ? 1 : a[i - (n - a.size())];
    const int64_t sb = i < n - b.size() ? 1 : b[i - (n - b.size())];
    DDP4J_CHECK_ARG(sa == sb || sa == 1 || sb == 1, op, ": shapes ", shape_str(a), " and ", shape_str(b),
                    " cannot be broadcast (dimension ", i, " from the left of the result: ", sa, " vs ", sb,
                    "); sizes must match or one must be 1");
    out[i] = sa == 1 ? sb : sa;
  }
  return out;
}

/**
 * Element strides of a contiguous tensor of `shape` read as `out` (shape broadcast to out): one
 * stride per dimension of out, 0 where the dimension is missing or stretched from size 1.
 */
inline std::vector<int64_t> broadcast_strides(const Shape& shape, const Shape& out) {
  std::vector<int64_t> strides(out.size(), 0);
  int64_t stride = 1;
  const size_t lead = out.size() - shape.size();
  for (size_t i = shape.size(); i-- > 0;) {
    strides[lead + i] = shape[i] == 1 && out[lead + i] != 1 ? 0 : stride;
    stride *= shape[i];
  }
  return strides;
}

/** Offset of element `flat` (row-major over out) in a tensor with the given broadcast strides. */
inline int64_t broadcast_offset(int64_t flat, const Shape& out, const std::vector<int64_t>& strides) {
  int64_t offset = 0;
  for (size_t i = out.size(); i-- > 0;) {
    const int64_t size = out[i];
    offset += (flat % size) * strides[i];
    flat /= size;
  }
  return offset;
}

/** A dimension d (negative counts from the end) of a tensor with ndim dimensions, checked: in [0, ndim). */
inline int wrap_dim(const char* op, int64_t d, int ndim, const Shape& shape) {
  const int64_t lo = ndim == 0 ? -1 : -ndim, hi = ndim == 0 ? 0 : ndim - 1;
  DDP4J_CHECK_ARG(d >= lo && d <= hi, op, ": dimension ", d, " is out of range for a tensor of shape ",
                  shape_str(shape), " (expected a dimension in [", lo, ", ", hi, "])");
  return static_cast<int>(d < 0 ? d + (ndim == 0 ? 1 : ndim) : d);
}

/** Product of shape[from, to). */
inline int64_t shape_product(const Shape& shape, int from, int to) {
  int64_t n = 1;
  for (int i = from; i < to; ++i) n *= shape[i];
  return n;
}

}  // namespace ddp4j
