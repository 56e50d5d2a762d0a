// CPU kernels of the broadcast family: binary element-wise ops and comparisons, where and
// masked_fill, each operand read through broadcast strides (0 along a stretched dimension). Work
// is split by rows of the output's last dimension; every output element is computed on its own.
#include <algorithm>
#include <array>
#include <cstring>

#include "ddp4j/broadcast.h"
#include "ddp4j/dispatch.h"
#include "ddp4j/kernels.h"
#include "ddp4j/parallel.h"

namespace ddp4j::cpu {
namespace {

using kernels::BinaryOp;

/**
 * Calls row(r, offsets, steps, last) for each row r of out's last dimension, offsets[k] the flat
 * offset of operand k's first element of that row and steps[k] its stride along the last dimension.
 */
template <size_t N, typename Row>
void for_each_row(const Shape& out, const std::array<const Shape*, N>& shapes, Row&& row) {
  const int64_t numel = shape_numel(out);
  if (numel == 0) return;
  if (out.empty()) {
    std::array<int64_t, N> zero{};
    row(0, zero, zero, 1);
    return;
  }
  std::array<std::vector<int64_t>, N> strides;
  std::array<int64_t, N> steps;
  for (size_t k = 0; k < N; ++k) {
    strides[k] = broadcast_strides(*shapes[k], out);
    steps[k] = strides[k].back();
  }
  const int64_t last = out.back(), rows = numel / last;
  parallel_for(0, rows, std::max<int64_t>(1, kGrainSize / last), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      std::array<int64_t, N> offsets;
      for (size_t k = 0; k < N; ++k) offsets[k] = broadcast_offset(r * last, out, strides[k]);
      row(r, offsets, steps, last);
    }
  });
}

template <typename T, typename R, typename F>
void binary(const Tensor& a, const Tensor& b, Tensor& out, F f) {
  const T* pa = a.data<T>();
  const T* pb = b.data<T>();
  R* po = out.data<R>();
  for_each_row<2>(out.shape(), {&a.shape(), &b.shape()}, [&](int64_t r, const auto& off, const auto& step, int64_t n) {
    const T* x = pa + off[0];
    const T* y = pb + off[1];
    R* dst = po + r * n;
    const int64_t sx = step[0], sy = step[1];
    for (int64_t j = 0; j < n; ++j) dst[j] = static_cast<R>(f(x[j * sx], y[j * sy]));
  });
}

template <typename T>
void compare(const Tensor& a, const Tensor& b, BinaryOp op, Tensor& out) {
  switch (op) {
    case BinaryOp::Eq: binary<T, uint8_t>(a, b, out, [](T x, T y) { return x == y; }); return;
    case BinaryOp::Ne: binary<T, uint8_t>(a, b, out, [](T x, T y) { return x != y; }); return;
    case BinaryOp::Lt: binary<T, uint8_t>(a, b, out, [](T x, T y) { return x < y; }); return;
    case BinaryOp::Gt: binary<T, uint8_t>(a, b, out, [](T x, T y) { return x > y; }); return;
    case BinaryOp::Le: binary<T, uint8_t>(a, b, out, [](T x, T y) { return x <= y; }); return;
    case BinaryOp::Ge: binary<T, uint8_t>(a, b, out, [](T x, T y) { return x >= y; }); return;
    default: throw Error(ErrorKind::InvalidArgument, "broadcast_binary: not a comparison");
  }
}

void broadcast_binary(const Tensor& a, const Tensor& b, BinaryOp op, Tensor& out) {
  switch (op) {
    case BinaryOp::Add: binary<float, float>(a, b, out, [](float x, float y) { return x + y; }); return;
    case BinaryOp::Sub: binary<float, float>(a, b, out, [](float x, float y) { return x - y; }); return;
    case BinaryOp::Mul: binary<float, float>(a, b, out, [](float x, float y) { return x * y; }); return;
    case BinaryOp::Div: binary<float, float>(a, b, out, [](float x, float y) { return x / y; }); return;
    default: break;
  }
  if (a.dtype() == DType::Int64) {
    compare<int64_t>(a, b, op, out);
  } else if (a.dtype() == DType::Bool) {
    compare<uint8_t>(a, b, op, out);
  } else {
    compare<float>(a, b, op, out);
  }
}

/** where by element size (the values are only moved). */
template <typename T>
void where_typed(const Tensor& condition, const Tensor& a, const Tensor& b, Tensor& out) {
  const uint8_t* pc = condition.data<uint8_t>();
  const T* pa = a.data<T>();
  const T* pb = b.data<T>();
  T* po = out.data<T>();
  for_each_row<3>(out.shape(), {&condition.shape(), &a.shape(), &b.shape()},
                  [&](int64_t r, const auto& off, const auto& step, int64_t n) {
                    const uint8_t* c = pc + off[0];
                    const T* x = pa + off[1];
                    const T* y = pb + off[2];
                    T* dst = po + r * n;
                    for (int64_t j = 0; j < n; ++j) dst[j] = c[j * step[0]] ? x[j * step[1]] : y[j * step[2]];
                  });
}

void where(const Tensor& condition, const Tensor& a, const Tensor& b, Tensor& out) {
  switch (dtype_size(out.dtype())) {
    case 1: where_typed<uint8_t>(condition, a, b, out); return;
    case 2: where_typed<uint16_t>(condition, a, b, out); return;
    case 4: where_typed<uint32_t>(condition, a, b, out); return;
    default: where_typed<uint64_t>(condition, a, b, out); return;
  }
}

template <typename T>
void masked_fill_typed(const Tensor& x, const Tensor& mask, T value, Tensor& out) {
  const T* px = x.data<T>();
  const uint8_t* pm = mask.data<uint8_t>();
  T* po = out.data<T>();
  for_each_row<2>(out.shape(), {&x.shape(), &mask.shape()}, [&](int64_t r, const auto& off, const auto& step, int64_t n) {
    const T* src = px + off[0];
    const uint8_t* m = pm + off[1];
    T* dst = po + r * n;
    for (int64_t j = 0; j < n; ++j) dst[j] = m[j * step[1]] ? value : src[j * step[0]];
  });
}

void masked_fill(const Tensor& x, const Tensor& mask, double value, Tensor& out) {
  switch (x.dtype()) {
    case DType::Int64: masked_fill_typed<int64_t>(x, mask, static_cast<int64_t>(value), out); return;
    case DType::Bool: masked_fill_typed<uint8_t>(x, mask, value != 0 ? 1 : 0, out); return;
    default: masked_fill_typed<float>(x, mask, static_cast<float>(value), out); return;
  }
}

}  // namespace

DDP4J_REGISTER_KERNEL(broadcast_binary, CPU, broadcast_binary);
DDP4J_REGISTER_KERNEL(where, CPU, where);
DDP4J_REGISTER_KERNEL(masked_fill, CPU, masked_fill);

}  // namespace ddp4j::cpu
