// convert.h: which instruction set the CPU dtype conversions (convert.cpp, torch.Tensor.to(dtype))
// use. Chosen once at load from what the CPU has; tests switch it to check every path against the
// scalar one (half.h), which defines the bits.
#pragma once
#include <cstdint>

#include "ddp4j/tensor.h"

namespace ddp4j::cpu {

/** The code path of the float32 <-> bfloat16 / float16 conversions. */
enum class ConvertPath {
  Scalar,  // half.h, one element at a time
  Avx2,    // 8 lanes: AVX2 integer rounding for bfloat16, F16C (vcvtps2ph / vcvtph2ps) for float16
  Avx512,  // 16 lanes: AVX-512F, the same operations
};

/** The path conversions take now: the widest the CPU has, unless set_convert_path chose another. */
ConvertPath convert_path();

/** Whether this CPU can run path (Scalar always). */
bool convert_path_supported(ConvertPath path);

/**
 * Makes later conversions take path (for tests that compare the paths). Throws
 * Error(InvalidArgument) naming the path when this CPU cannot run it.
 */
void set_convert_path(ConvertPath path);

/**
 * y[i] = x[i] rounded to low (DType::BFloat16 or DType::Float16, round to nearest even) and widened
 * back to float32: the value Tensor.to(low).to(float32) gives, on the calling thread only (the
 * autocast GEMMs call it per block). y may equal x.
 */
void round_to_low_precision(DType low, const float* x, float* y, int64_t n);

/** "scalar", "avx2" or "avx512". */
const char* convert_path_name(ConvertPath path);

// ---- raw conversions, for code that works on buffers (the collectives' bfloat16 / float16 reductions)

/**
 * y[0, n) = x[0, n) widened exactly from `from` (DType::BFloat16 or DType::Float16) to float32, on
 * the current path, on the calling thread (no parallel_for: callers convert blocks that stay in L1).
 */
void widen_to_float(DType from, const uint16_t* x, float* y, int64_t n);

/** y[0, n) = x[0, n) rounded (to nearest even, half.h's bits) to `to` (BFloat16 or Float16); calling thread. */
void narrow_from_float(DType to, const float* x, uint16_t* y, int64_t n);

}  // namespace ddp4j::cpu
