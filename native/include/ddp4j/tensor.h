// tensor.h: the one native tensor type: shared storage, shape, dtype, device. Contiguous,
// row-major; views (reshape) share storage.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ddp4j/errors.h"

namespace ddp4j {

/**
 * Element type. Values match org.ddp4j.tensor.DType ordinals. Mirrors torch.dtype: Float32 is
 * torch.float32, Int64 torch.int64, BFloat16 torch.bfloat16 (8 exponent bits, 7 mantissa bits),
 * Float16 torch.float16 (IEEE binary16: 5 exponent bits, 10 mantissa bits). The two 16-bit types
 * are stored as their bit patterns (uint16_t); ddp4j/half.h converts them. Bool is torch.bool: one
 * byte per element, 0 or 1 (masks, comparison results).
 */
enum class DType : int32_t { Float32 = 0, Int64 = 1, BFloat16 = 2, Float16 = 3, Bool = 4 };
/** Number of DType values: a dtype read from the wire or from Java is valid when below it. */
constexpr int kNumDTypes = 5;

/** Kind of device. Values match org.ddp4j.tensor.Device.Type ordinals. */
enum class DeviceType : int32_t { CPU = 0, CUDA = 1 };
constexpr int kNumDeviceTypes = 2;

/** A device: type plus ordinal (always 0 for CPU). */
struct Device {
  DeviceType type = DeviceType::CPU;
  int index = 0;
  bool operator==(const Device& o) const { return type == o.type && index == o.index; }
  bool operator!=(const Device& o) const { return !(*this == o); }
  std::string str() const;  // "cpu" or "cuda:N"
};

/** Bytes per element of dtype: 4, 8, 2, 2, 1. */
size_t dtype_size(DType dtype);
/** PyTorch's name without "torch.": "float32", "int64", "bfloat16", "float16" or "bool" ("?" for an invalid value). */
const char* dtype_name(DType dtype);
/** True for the 16-bit floating types (bfloat16, float16), which ops take only through conversions so far. */
inline bool is_reduced_float(DType dtype) { return dtype == DType::BFloat16 || dtype == DType::Float16; }

/**
 * A block of device memory owned through the device's allocator (see allocator.h). Freed when the
 * last tensor that shares it goes away.
 */
class Storage {
 public:
  Storage(size_t nbytes, Device device);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;
  void* data() const { return data_; }
  size_t nbytes() const { return nbytes_; }
  Device device() const { return device_; }

 private:
  void* data_;
  size_t nbytes_;
  Device device_;
};

using Shape = std::vector<int64_t>;

/** "[2, 3]" for error messages. */
std::string shape_str(const Shape& shape);
/** Product of the sizes (1 for a scalar's empty shape). */
int64_t shape_numel(const Shape& shape);

/** A contiguous row-major tensor viewing (part of) a Storage. Cheap to copy: copies share storage. */
class Tensor {
 public:
  Tensor() = default;

  /** Uninitialised tensor. Throws InvalidArgument on negative sizes, OutOfMemory when allocation fails. */
  static Tensor empty(const Shape& shape, DType dtype, Device device = {});
  /** Zero-filled tensor. */
  static Tensor zeros(const Shape& shape, DType dtype, Device device = {});

  bool defined() const { return storage_ != nullptr; }
  const Shape& shape() const { return shape_; }
  int dim() const { return static_cast<int>(shape_.size()); }
  /** Size of dimension d; negative d counts from the end. */
  int64_t size(int d) const;
  int64_t numel() const { return numel_; }
  DType dtype() const { return dtype_; }
  Device device() const { return storage_->device(); }
  size_t nbytes() const { return static_cast<size_t>(numel_) * dtype_size(dtype_); }
  const std::shared_ptr<Storage>& storage() const { return storage_; }

  /** Pointer to the first element. */
  void* raw_data() const { return static_cast<char*>(storage_->data()) + offset_bytes_; }
  template <typename T>
  T* data() const { return static_cast<T*>(raw_data()); }

  /** A tensor of a new shape over the same elements (one size may be -1). Mirrors Tensor.view. */
  Tensor view(const Shape& shape) const;

  /**
   * A tensor of shape over elements [offset, offset + numel(shape)) of this one's flat data, sharing
   * storage (DDP lays gradients out as slices of one bucket). Throws InvalidArgument if out of range.
   */
  Tensor flat_slice(int64_t offset, const Shape& shape) const;

  /** "float32[2, 3] on cpu" for error messages. */
  std::string describe() const;

 private:
  std::shared_ptr<Storage> storage_;
  Shape shape_;
  int64_t numel_ = 0;
  size_t offset_bytes_ = 0;
  DType dtype_ = DType::Float32;
};

}  // namespace ddp4j
