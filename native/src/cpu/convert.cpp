// CPU kernel of torch.Tensor.to(dtype) between float32, bfloat16 and float16. The scalar functions
// of half.h define the bits; the AVX2 and AVX-512 loops compute the same (convert_test checks every
// 16-bit input and a million float32 patterns on each path). Elementwise, so the result does not
// depend on how parallel_for splits the range.
//
// bfloat16 rounds with integer arithmetic (add 0x7fff plus the kept lowest bit, shift), not with
// AVX512-BF16's vcvtneps2bf16: that instruction flushes subnormals to zero, PyTorch does not.
// float16 uses the hardware conversions (F16C / AVX-512F vcvtps2ph with round to nearest even,
// vcvtph2ps), whose results equal the scalar ones except for NaN payloads: a vector holding a NaN
// is patched lane by lane with the scalar result.
// Functions with vector code carry target attributes: the library still loads on any x86-64 CPU
// with AVX2, and the path is chosen at run time.
#include "cpu/convert.h"

#include <immintrin.h>

#include <algorithm>
#include <atomic>

#include "ddp4j/dispatch.h"
#include "ddp4j/half.h"
#include "ddp4j/kernels.h"
#include "ddp4j/parallel.h"

// GCC 12's avx512fintrin.h starts some intrinsics from an "undefined" register and then warns
// about it at -O3 (a false positive in the header, not in this file).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace ddp4j::cpu {
namespace {

#define DDP4J_AVX512 __attribute__((target("avx512f")))
#define DDP4J_F16C __attribute__((target("avx2,f16c")))

ConvertPath best_path() {
  if (__builtin_cpu_supports("avx512f")) return ConvertPath::Avx512;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c")) return ConvertPath::Avx2;
  return ConvertPath::Scalar;
}

std::atomic<ConvertPath>& path_slot() {
  static std::atomic<ConvertPath> path{best_path()};
  return path;
}

// ---- scalar ---------------------------------------------------------------------------------------

void to_bf16_scalar(const float* x, uint16_t* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = float_to_bfloat16(x[i]);
}
void to_fp16_scalar(const float* x, uint16_t* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = float_to_float16(x[i]);
}
void from_bf16_scalar(const uint16_t* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = bfloat16_to_float(x[i]);
}
void from_fp16_scalar(const uint16_t* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = float16_to_float(x[i]);
}

/** Rewrites the lanes of y[0, lanes) whose bit in nan_mask is set with the scalar float16 of x. */
inline void patch_fp16_nans(const float* x, uint16_t* y, unsigned nan_mask) {
  for (; nan_mask != 0; nan_mask &= nan_mask - 1) {
    const int k = __builtin_ctz(nan_mask);
    y[k] = float_to_float16(x[k]);
  }
}

// ---- AVX2 (+ F16C) --------------------------------------------------------------------------------

DDP4J_F16C void to_bf16_avx2(const float* x, uint16_t* y, int64_t n) {
  const __m256i one = _mm256_set1_epi32(1), bias = _mm256_set1_epi32(0x7fff), nan_bits = _mm256_set1_epi32(0xffff);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    const __m256i u = _mm256_castps_si256(v);
    const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), one);
    __m256i r = _mm256_srli_epi32(_mm256_add_epi32(u, _mm256_add_epi32(lsb, bias)), 16);
    r = _mm256_blendv_epi8(r, nan_bits, _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q)));
    // Each lane holds at most 0xffff, so the unsigned saturating pack is a plain narrowing.
    const __m128i packed = _mm_packus_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i), packed);
  }
  to_bf16_scalar(x + i, y + i, n - i);
}

DDP4J_F16C void to_fp16_avx2(const float* x, uint16_t* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
    const unsigned nan = static_cast<unsigned>(_mm256_movemask_ps(_mm256_cmp_ps(v, v, _CMP_UNORD_Q)));
    if (nan != 0) patch_fp16_nans(x + i, y + i, nan);
  }
  to_fp16_scalar(x + i, y + i, n - i);
}

DDP4J_F16C void from_bf16_avx2(const uint16_t* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + i), _mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
  }
  from_bf16_scalar(x + i, y + i, n - i);
}

DDP4J_F16C void from_fp16_avx2(const uint16_t* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i));
    _mm256_storeu_ps(y + i, _mm256_cvtph_ps(h));
  }
  from_fp16_scalar(x + i, y + i, n - i);
}

// ---- AVX-512F -------------------------------------------------------------------------------------

DDP4J_AVX512 void to_bf16_avx512(const float* x, uint16_t* y, int64_t n) {
  const __m512i one = _mm512_set1_epi32(1), bias = _mm512_set1_epi32(0x7fff), nan_bits = _mm512_set1_epi32(0xffff);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 v = _mm512_loadu_ps(x + i);
    const __m512i u = _mm512_castps_si512(v);
    const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), one);
    __m512i r = _mm512_srli_epi32(_mm512_add_epi32(u, _mm512_add_epi32(lsb, bias)), 16);
    r = _mm512_mask_mov_epi32(r, _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q), nan_bits);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + i), _mm512_cvtepi32_epi16(r));
  }
  to_bf16_scalar(x + i, y + i, n - i);
}

DDP4J_AVX512 void to_fp16_avx512(const float* x, uint16_t* y, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 v = _mm512_loadu_ps(x + i);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + i),
                        _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    const unsigned nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    if (nan != 0) patch_fp16_nans(x + i, y + i, nan);
  }
  to_fp16_scalar(x + i, y + i, n - i);
}

DDP4J_AVX512 void from_bf16_avx512(const uint16_t* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i));
    _mm512_storeu_si512(y + i, _mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  }
  from_bf16_scalar(x + i, y + i, n - i);
}

DDP4J_AVX512 void from_fp16_avx512(const uint16_t* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i));
    _mm512_storeu_ps(y + i, _mm512_cvtph_ps(h));
  }
  from_fp16_scalar(x + i, y + i, n - i);
}

// ---- dispatch -------------------------------------------------------------------------------------

using Narrow = void (*)(const float*, uint16_t*, int64_t);
using Widen = void (*)(const uint16_t*, float*, int64_t);

Narrow narrow_fn(DType to, ConvertPath path) {
  const bool bf16 = to == DType::BFloat16;
  switch (path) {
    case ConvertPath::Avx512: return bf16 ? to_bf16_avx512 : to_fp16_avx512;
    case ConvertPath::Avx2: return bf16 ? to_bf16_avx2 : to_fp16_avx2;
    case ConvertPath::Scalar: break;
  }
  return bf16 ? to_bf16_scalar : to_fp16_scalar;
}

Widen widen_fn(DType from, ConvertPath path) {
  const bool bf16 = from == DType::BFloat16;
  switch (path) {
    case ConvertPath::Avx512: return bf16 ? from_bf16_avx512 : from_fp16_avx512;
    case ConvertPath::Avx2: return bf16 ? from_bf16_avx2 : from_fp16_avx2;
    case ConvertPath::Scalar: break;
  }
  return bf16 ? from_bf16_scalar : from_fp16_scalar;
}

/**
 * dst = src in dst's dtype: two different dtypes among float32, bfloat16 and float16 (the ops
 * layer checked the pair), same numel. Between the two 16-bit types through float32 in chunks:
 * the widening is exact, so this rounds once, as PyTorch does; float16 NaNs then become 0x7FC0
 * (half.h's float16_to_bfloat16).
 */
void to_dtype(const Tensor& src, Tensor& dst) {
  const DType from = src.dtype(), to = dst.dtype();
  const int64_t n = src.numel();
  const ConvertPath path = convert_path();
  if (from == DType::Float32) {
    const Narrow narrow = narrow_fn(to, path);
    const float* x = src.data<float>();
    uint16_t* y = dst.data<uint16_t>();
    parallel_for(0, n, kGrainSize, [=](int64_t b, int64_t e) { narrow(x + b, y + b, e - b); });
  } else if (to == DType::Float32) {
    const Widen widen = widen_fn(from, path);
    const uint16_t* x = src.data<uint16_t>();
    float* y = dst.data<float>();
    parallel_for(0, n, kGrainSize, [=](int64_t b, int64_t e) { widen(x + b, y + b, e - b); });
  } else {
    const Widen widen = widen_fn(from, path);
    const Narrow narrow = narrow_fn(to, path);
    const uint16_t* x = src.data<uint16_t>();
    uint16_t* y = dst.data<uint16_t>();
    parallel_for(0, n, kGrainSize, [=](int64_t b, int64_t e) {
      constexpr int64_t kChunk = 1024;  // float32 scratch on the stack, 4 KiB
      float buffer[kChunk];
      for (int64_t at = b; at < e; at += kChunk) {
        const int64_t m = std::min(kChunk, e - at);
        widen(x + at, buffer, m);
        narrow(buffer, y + at, m);
        if (to == DType::BFloat16) {  // only a NaN narrows to 0xFFFF; PyTorch's scalar path writes 0x7FC0
          for (int64_t k = at; k < at + m; ++k) y[k] = y[k] == 0xffff ? uint16_t{0x7fc0} : y[k];
        }
      }
    });
  }
}

}  // namespace

void round_to_low_precision(DType low, const float* x, float* y, int64_t n) {
  const ConvertPath path = convert_path();
  const Narrow narrow = narrow_fn(low, path);
  const Widen widen = widen_fn(low, path);
  constexpr int64_t kChunk = 1024;  // 16-bit scratch on the stack, 2 KiB
  uint16_t buffer[kChunk];
  for (int64_t at = 0; at < n; at += kChunk) {
    const int64_t m = std::min(kChunk, n - at);
    narrow(x + at, buffer, m);
    widen(buffer, y + at, m);
  }
}

ConvertPath convert_path() { return path_slot().load(std::memory_order_relaxed); }

bool convert_path_supported(ConvertPath path) {
  switch (path) {
    case ConvertPath::Scalar: return true;
    case ConvertPath::Avx2: return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c");
    case ConvertPath::Avx512: return __builtin_cpu_supports("avx512f");
  }
  return false;
}

void set_convert_path(ConvertPath path) {
  DDP4J_CHECK_ARG(convert_path_supported(path), "dtype conversions: this CPU cannot run the ", convert_path_name(path),
                  " path");
  path_slot().store(path, std::memory_order_relaxed);
}

const char* convert_path_name(ConvertPath path) {
  switch (path) {
    case ConvertPath::Scalar: return "scalar";
    case ConvertPath::Avx2: return "avx2";
    case ConvertPath::Avx512: return "avx512";
  }
  return "?";
}

void widen_to_float(DType from, const uint16_t* x, float* y, int64_t n) {
  if (n > 0) widen_fn(from, convert_path())(x, y, n);
}

void narrow_from_float(DType to, const float* x, uint16_t* y, int64_t n) {
  if (n > 0) narrow_fn(to, convert_path())(x, y, n);
}

DDP4J_REGISTER_KERNEL(to_dtype, CPU, to_dtype);

}  // namespace ddp4j::cpu
