#include "ddp4j/tensor.h"

#include <cstring>
#include <sstream>

#include "ddp4j/allocator.h"

namespace ddp4j {

std::string Device::str() const {
  return type == DeviceType::CPU ? std::string("cpu") : "cuda:" + std::to_string(index);
}

size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::Float32: return 4;
    case DType::Int64: return 8;
    case DType::BFloat16:
    case DType::Float16: return 2;
    case DType::Bool: return 1;
  }
  throw Error(ErrorKind::InvalidArgument, "unknown dtype " + std::to_string(static_cast<int>(dtype)));
}

const char* dtype_name(DType dtype) {
  switch (dtype) {
    case DType::Float32: return "float32";
    case DType::Int64: return "int64";
    case DType::BFloat16: return "bfloat16";
    case DType::Float16: return "float16";
    case DType::Bool: return "bool";
  }
  return "?";
}

Storage::Storage(size_t nbytes, Device device)
    : data_(get_allocator(device.type).allocate(nbytes, device)), nbytes_(nbytes), device_(device) {}

Storage::~Storage() { get_allocator(device_.type).deallocate(data_, nbytes_, device_); }

std::string shape_str(const Shape& shape) {
  std::ostringstream out;
  out << '[';
  for (size_t i = 0; i < shape.size(); ++i) out << (i ? ", " : "") << shape[i];
  out << ']';
  return out.str();
}

int64_t shape_numel(const Shape& shape) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return n;
}

Tensor Tensor::empty(const Shape& shape, DType dtype, Device device) {
  for (int64_t s : shape) DDP4J_CHECK_ARG(s >= 0, "tensor sizes must be non-negative, got ", shape_str(shape));
  DDP4J_CHECK_ARG(static_cast<int>(dtype) >= 0 && static_cast<int>(dtype) < kNumDTypes, "unknown dtype ",
                  static_cast<int>(dtype));
  Tensor t;
  t.shape_ = shape;
  t.numel_ = shape_numel(shape);
  t.dtype_ = dtype;
  t.storage_ = std::make_shared<Storage>(static_cast<size_t>(t.numel_) * dtype_size(dtype), device);
  return t;
}

Tensor Tensor::zeros(const Shape& shape, DType dtype, Device device) {
  Tensor t = empty(shape, dtype, device);
  if (device.type == DeviceType::CPU) {
    std::memset(t.raw_data(), 0, t.nbytes());
  } else {
    throw Error(ErrorKind::IllegalState, "Tensor::zeros on " + device.str() + " must go through ops::fill_");
  }
  return t;
}

int64_t Tensor::size(int d) const {
  int n = dim();
  int i = d < 0 ? d + n : d;
  DDP4J_CHECK_ARG(i >= 0 && i < n, "dimension ", d, " out of range for a tensor of shape ", shape_str(shape_));
  return shape_[i];
}

Tensor Tensor::view(const Shape& shape) const {
  Shape resolved = shape;
  int infer = -1;
  int64_t known = 1;
  for (size_t i = 0; i < resolved.size(); ++i) {
    if (resolved[i] == -1) {
      DDP4J_CHECK_ARG(infer < 0, "view: only one size may be -1, got ", shape_str(shape));
      infer = static_cast<int>(i);
    } else {
      DDP4J_CHECK_ARG(resolved[i] >= 0, "view: invalid size in ", shape_str(shape));
      known *= resolved[i];
    }
  }
  if (infer >= 0) {
    DDP4J_CHECK_ARG(known > 0 && numel_ % known == 0, "view: shape ", shape_str(shape),
                    " is invalid for a tensor of shape ", shape_str(shape_), " (", numel_, " elements)");
    resolved[infer] = numel_ / known;
  }
  DDP4J_CHECK_ARG(shape_numel(resolved) == numel_, "view: shape ", shape_str(shape), " is invalid for a tensor of shape ",
                  shape_str(shape_), " (", numel_, " elements)");
  Tensor t = *this;
  t.shape_ = resolved;
  return t;
}

Tensor Tensor::flat_slice(int64_t offset, const Shape& shape) const {
  int64_t n = shape_numel(shape);
  DDP4J_CHECK_ARG(offset >= 0 && n >= 0 && offset + n <= numel_, "flat_slice: elements [", offset, ", ", offset + n,
                  ") are outside a tensor of ", numel_, " elements");
  Tensor t = *this;
  t.shape_ = shape;
  t.numel_ = n;
  t.offset_bytes_ = offset_bytes_ + static_cast<size_t>(offset) * dtype_size(dtype_);
  return t;
}

std::string Tensor::describe() const {
  return std::string(dtype_name(dtype_)) + shape_str(shape_) + " on " + device().str();
}

}  // namespace ddp4j
