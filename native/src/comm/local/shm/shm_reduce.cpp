// Element-wise n-source reductions for the shared-memory all-reduce. One pass over the sources per
// block of 4 vectors (rather than n-1 pairwise passes) so each output byte is written once and the
// sources stream from cache. Functions that use AVX-512 carry target attributes, so the library
// still loads and runs on AVX2-only CPUs (the AVX2 path is the build's baseline, -mavx2).
#include "comm/local/shm/shm_reduce.h"

#include <immintrin.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <type_traits>

#include "cpu/convert.h"
#include "ddp4j/errors.h"

// GCC 12's avx512fintrin.h starts some int64 intrinsics from an "undefined" register and then
// warns about it at -O3 (a false positive in the header, not in this file).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace ddp4j::shm {
namespace {

#define DDP4J_AVX512 __attribute__((target("avx512f")))

// Scalar rules, shared by every path's tail: `a` is the running value, `b` the next source. MIN and
// MAX are written as the Gloo path writes them, and as (v)minps/(v)maxps(b, a) behave (NaN: a).
struct AddS { template <class T> static T s(T a, T b) { return a + b; } };
struct MulS { template <class T> static T s(T a, T b) { return a * b; } };
struct MinS { template <class T> static T s(T a, T b) { return b < a ? b : a; } };
struct MaxS { template <class T> static T s(T a, T b) { return b > a ? b : a; } };
// int64 sums and products wrap (no signed-overflow UB).
struct AddI { static int64_t s(int64_t a, int64_t b) { return (int64_t)((uint64_t)a + (uint64_t)b); } };
struct MulI { static int64_t s(int64_t a, int64_t b) { return (int64_t)((uint64_t)a * (uint64_t)b); } };

// ---- vector traits: T (element), R (register), kLanes, load, store, op, s (scalar rule) ----------

#define DDP4J_V256_F32(NAME, EXPR, SCALAR)                                              \
  struct NAME {                                                                         \
    using T = float;                                                                    \
    using R = __m256;                                                                   \
    static constexpr size_t kLanes = 8;                                                 \
    static R load(const T* p) { return _mm256_loadu_ps(p); }                            \
    static void store(T* p, R v) { _mm256_storeu_ps(p, v); }                            \
    static void stream(T* p, R v) { _mm256_stream_ps(p, v); }                           \
    static R op(R a, R b) { return EXPR; }                                              \
    static T s(T a, T b) { return SCALAR::s(a, b); }                                    \
    static R splat(float x) { return _mm256_set1_ps(x); }                               \
    static R scale(R a, R m) { return _mm256_mul_ps(a, m); }                            \
    static T scale_s(T a, float m) { return a * m; }                                    \
  };
DDP4J_V256_F32(AddF256, _mm256_add_ps(a, b), AddS)
DDP4J_V256_F32(MulF256, _mm256_mul_ps(a, b), MulS)
DDP4J_V256_F32(MinF256, _mm256_min_ps(b, a), MinS)
DDP4J_V256_F32(MaxF256, _mm256_max_ps(b, a), MaxS)

#define DDP4J_V256_I64(NAME, EXPR, SCALAR)                                              \
  struct NAME {                                                                         \
    using T = int64_t;                                                                  \
    using R = __m256i;                                                                  \
    static constexpr size_t kLanes = 4;                                                 \
    static R load(const T* p) { return _mm256_loadu_si256(reinterpret_cast<const R*>(p)); } \
    static void store(T* p, R v) { _mm256_storeu_si256(reinterpret_cast<R*>(p), v); }   \
    static void stream(T* p, R v) { _mm256_stream_si256(reinterpret_cast<R*>(p), v); }  \
    static R op(R a, R b) { return EXPR; }                                              \
    static T s(T a, T b) { return SCALAR::s(a, b); }                                    \
    static R splat(float) { return _mm256_setzero_si256(); }                            \
    static R scale(R a, R) { return a; }                                                \
    static T scale_s(T a, float) { return a; }                                          \
  };
DDP4J_V256_I64(AddI256, _mm256_add_epi64(a, b), AddI)
DDP4J_V256_I64(MinI256, _mm256_blendv_epi8(a, b, _mm256_cmpgt_epi64(a, b)), MinS)
DDP4J_V256_I64(MaxI256, _mm256_blendv_epi8(a, b, _mm256_cmpgt_epi64(b, a)), MaxS)

#define DDP4J_V512_F32(NAME, EXPR, SCALAR)                                              \
  struct NAME {                                                                         \
    using T = float;                                                                    \
    using R = __m512;                                                                   \
    static constexpr size_t kLanes = 16;                                                \
    DDP4J_AVX512 static R load(const T* p) { return _mm512_loadu_ps(p); }               \
    DDP4J_AVX512 static void store(T* p, R v) { _mm512_storeu_ps(p, v); }               \
    DDP4J_AVX512 static void stream(T* p, R v) { _mm512_stream_ps(p, v); }              \
    DDP4J_AVX512 static R op(R a, R b) { return EXPR; }                                 \
    static T s(T a, T b) { return SCALAR::s(a, b); }                                    \
    DDP4J_AVX512 static R splat(float x) { return _mm512_set1_ps(x); }                  \
    DDP4J_AVX512 static R scale(R a, R m) { return _mm512_mul_ps(a, m); }               \
    static T scale_s(T a, float m) { return a * m; }                                    \
  };
DDP4J_V512_F32(AddF512, _mm512_add_ps(a, b), AddS)
DDP4J_V512_F32(MulF512, _mm512_mul_ps(a, b), MulS)
DDP4J_V512_F32(MinF512, _mm512_min_ps(b, a), MinS)
DDP4J_V512_F32(MaxF512, _mm512_max_ps(b, a), MaxS)

#define DDP4J_V512_I64(NAME, EXPR, SCALAR)                                              \
  struct NAME {                                                                         \
    using T = int64_t;                                                                  \
    using R = __m512i;                                                                  \
    static constexpr size_t kLanes = 8;                                                 \
    DDP4J_AVX512 static R load(const T* p) { return _mm512_loadu_si512(p); }            \
    DDP4J_AVX512 static void store(T* p, R v) { _mm512_storeu_si512(p, v); }            \
    DDP4J_AVX512 static void stream(T* p, R v) { _mm512_stream_si512(reinterpret_cast<__m512i*>(p), v); } \
    DDP4J_AVX512 static R op(R a, R b) { return EXPR; }                                 \
    static T s(T a, T b) { return SCALAR::s(a, b); }                                    \
    DDP4J_AVX512 static R splat(float) { return _mm512_setzero_si512(); }               \
    DDP4J_AVX512 static R scale(R a, R) { return a; }                                   \
    static T scale_s(T a, float) { return a; }                                          \
  };
DDP4J_V512_I64(AddI512, _mm512_add_epi64(a, b), AddI)
DDP4J_V512_I64(MinI512, _mm512_min_epi64(a, b), MinS)
DDP4J_V512_I64(MaxI512, _mm512_max_epi64(a, b), MaxS)

// ---- the kernel, once per ISA (a target attribute cannot be a template parameter) ----------------

// out (and out2 when not null) = the sources combined left to right, times `inv` when `scale`
// (AVG: the rounded sum, then one rounded multiplication, exactly as a separate pass would give).
#define DDP4J_REDUCE_KERNEL(NAME, ATTR)                                                          \
  template <class V>                                                                             \
  ATTR void NAME(void* out_v, void* out2_v, const void* const* srcs_v, int n, size_t count, bool scale, \
                 float inv, bool stream_out) {                                                   \
    using T = typename V::T;                                                                     \
    T* out = static_cast<T*>(out_v);                                                             \
    T* out2 = static_cast<T*>(out2_v);                                                           \
    const T* const* src = reinterpret_cast<const T* const*>(srcs_v);                             \
    constexpr size_t W = V::kLanes;                                                              \
    const auto m = V::splat(inv);                                                                \
    /* Non-temporal stores need whole aligned vectors; `out` is a slot, 64-byte aligned. */      \
    const bool st = stream_out && (reinterpret_cast<uintptr_t>(out) % 64) == 0;                  \
    size_t i = 0;                                                                                \
    for (; i + 4 * W <= count; i += 4 * W) {                                                     \
      const T* p = src[0] + i;                                                                   \
      auto a0 = V::load(p), a1 = V::load(p + W), a2 = V::load(p + 2 * W), a3 = V::load(p + 3 * W); \
      for (int s = 1; s < n; s++) {                                                              \
        const T* q = src[s] + i;                                                                 \
        a0 = V::op(a0, V::load(q));                                                              \
        a1 = V::op(a1, V::load(q + W));                                                          \
        a2 = V::op(a2, V::load(q + 2 * W));                                                      \
        a3 = V::op(a3, V::load(q + 3 * W));                                                      \
      }                                                                                          \
      if (scale) {                                                                               \
        a0 = V::scale(a0, m);                                                                    \
        a1 = V::scale(a1, m);                                                                    \
        a2 = V::scale(a2, m);                                                                    \
        a3 = V::scale(a3, m);                                                                    \
      }                                                                                          \
      if (st) V::stream(out + i, a0); else V::store(out + i, a0);                                                                     \
      if (st) V::stream(out + i + W, a1); else V::store(out + i + W, a1);                                                                 \
      if (st) V::stream(out + i + 2 * W, a2); else V::store(out + i + 2 * W, a2);                                                             \
      if (st) V::stream(out + i + 3 * W, a3); else V::store(out + i + 3 * W, a3);                                                             \
      if (out2 != nullptr) {                                                                     \
        V::store(out2 + i, a0);                                                                  \
        V::store(out2 + i + W, a1);                                                              \
        V::store(out2 + i + 2 * W, a2);                                                          \
        V::store(out2 + i + 3 * W, a3);                                                          \
      }                                                                                          \
    }                                                                                            \
    for (; i + W <= count; i += W) {                                                             \
      auto a = V::load(src[0] + i);                                                              \
      for (int s = 1; s < n; s++) a = V::op(a, V::load(src[s] + i));                             \
      if (scale) a = V::scale(a, m);                                                             \
      if (st) V::stream(out + i, a); else V::store(out + i, a);                                  \
      if (out2 != nullptr) V::store(out2 + i, a);                                                \
    }                                                                                            \
    for (; i < count; i++) {                                                                     \
      T a = src[0][i];                                                                           \
      for (int s = 1; s < n; s++) a = V::s(a, src[s][i]);                                        \
      if (scale) a = V::scale_s(a, inv);                                                         \
      out[i] = a;                                                                                \
      if (out2 != nullptr) out2[i] = a;                                                          \
    }                                                                                            \
    if (st) _mm_sfence();                                                                        \
  }

DDP4J_REDUCE_KERNEL(reduce_avx2, )
DDP4J_REDUCE_KERNEL(reduce_avx512, DDP4J_AVX512)

template <class T, class S>
void reduce_scalar(void* out_v, void* out2_v, const void* const* srcs_v, int n, size_t count, bool scale, float inv,
                   bool) {
  T* out = static_cast<T*>(out_v);
  T* out2 = static_cast<T*>(out2_v);
  const T* const* src = reinterpret_cast<const T* const*>(srcs_v);
  for (size_t i = 0; i < count; i++) {
    T a = src[0][i];
    for (int s = 1; s < n; s++) a = S::s(a, src[s][i]);
    if constexpr (std::is_same<T, float>::value) {
      if (scale) a = a * inv;
    }
    out[i] = a;
    if (out2 != nullptr) out2[i] = a;
  }
}

// The segment copies, with cached or non-temporal (kStream) stores: the same loop, only the store
// differs (which one is cheaper depends on the machine's mode, see ShmOptions::stores).
template <bool kStream>
DDP4J_AVX512 inline void store64(char* d, __m512i v) {
  if constexpr (kStream) {
    _mm512_stream_si512(reinterpret_cast<__m512i*>(d), v);
  } else {
    _mm512_storeu_si512(d, v);
  }
}

template <bool kStream>
inline void store32(char* d, __m256i v) {
  if constexpr (kStream) {
    _mm256_stream_si256(reinterpret_cast<__m256i*>(d), v);
  } else {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(d), v);
  }
}

template <bool kStream>
DDP4J_AVX512 void copy_avx512(char* d, const char* s, size_t n) {
  size_t i = 0;
  for (; i + 256 <= n; i += 256) {
    __m512i a = _mm512_loadu_si512(s + i), b = _mm512_loadu_si512(s + i + 64), c = _mm512_loadu_si512(s + i + 128),
            e = _mm512_loadu_si512(s + i + 192);
    store64<kStream>(d + i, a);
    store64<kStream>(d + i + 64, b);
    store64<kStream>(d + i + 128, c);
    store64<kStream>(d + i + 192, e);
  }
  for (; i + 64 <= n; i += 64) store64<kStream>(d + i, _mm512_loadu_si512(s + i));
  if constexpr (kStream) _mm_sfence();
  if (i < n) std::memcpy(d + i, s + i, n - i);  // < 64 bytes: below glibc's rep movsb threshold
}

template <bool kStream>
void copy_avx2(char* d, const char* s, size_t n) {
  size_t i = 0;
  for (; i + 128 <= n; i += 128) {
    __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + i));
    __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + i + 32));
    __m256i c = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + i + 64));
    __m256i e = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + i + 96));
    store32<kStream>(d + i, a);
    store32<kStream>(d + i + 32, b);
    store32<kStream>(d + i + 64, c);
    store32<kStream>(d + i + 96, e);
  }
  for (; i + 32 <= n; i += 32) store32<kStream>(d + i, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + i)));
  if constexpr (kStream) _mm_sfence();
  if (i < n) std::memcpy(d + i, s + i, n - i);
}

using Kernel = void (*)(void*, void*, const void* const*, int, size_t, bool, float, bool);

enum class Isa { Scalar, Avx2, Avx512 };

Isa detect_isa() {
  if (__builtin_cpu_supports("avx512f")) return Isa::Avx512;
  if (__builtin_cpu_supports("avx2")) return Isa::Avx2;
  return Isa::Scalar;
}

std::atomic<bool> g_force_scalar{false};

Isa current_isa() {
  static const Isa isa = detect_isa();
  return g_force_scalar.load(std::memory_order_relaxed) ? Isa::Scalar : isa;
}

Kernel pick(DType dtype, ReduceOp op, Isa isa) {
  const bool f = dtype == DType::Float32;
  switch (op) {
    case ReduceOp::SUM:
    case ReduceOp::AVG:
      if (isa == Isa::Avx512) return f ? reduce_avx512<AddF512> : reduce_avx512<AddI512>;
      if (isa == Isa::Avx2) return f ? reduce_avx2<AddF256> : reduce_avx2<AddI256>;
      return f ? reduce_scalar<float, AddS> : reduce_scalar<int64_t, AddI>;
    case ReduceOp::PRODUCT:
      // No 64-bit multiply in AVX2 or plain AVX-512F: int64 products stay scalar.
      if (!f) return reduce_scalar<int64_t, MulI>;
      if (isa == Isa::Avx512) return reduce_avx512<MulF512>;
      if (isa == Isa::Avx2) return reduce_avx2<MulF256>;
      return reduce_scalar<float, MulS>;
    case ReduceOp::MIN:
      if (isa == Isa::Avx512) return f ? reduce_avx512<MinF512> : reduce_avx512<MinI512>;
      if (isa == Isa::Avx2) return f ? reduce_avx2<MinF256> : reduce_avx2<MinI256>;
      return f ? reduce_scalar<float, MinS> : reduce_scalar<int64_t, MinS>;
    case ReduceOp::MAX:
      if (isa == Isa::Avx512) return f ? reduce_avx512<MaxF512> : reduce_avx512<MaxI512>;
      if (isa == Isa::Avx2) return f ? reduce_avx2<MaxF256> : reduce_avx2<MaxI256>;
      return f ? reduce_scalar<float, MaxS> : reduce_scalar<int64_t, MaxS>;
  }
  throw Error(ErrorKind::InvalidArgument, "allReduce: unknown ReduceOp");
}

// bfloat16 / float16 (as DeepSpeed's CPU shm all-reduce does): per block of kLowBlock elements,
// every source is widened exactly to float32 and combined with the float32 kernel of `op` (the same
// left-to-right order and rules), AVG multiplies by the float reciprocal, and the block is rounded
// once to the 16-bit type at the end: no partial sum is ever rounded to 16 bits. The blocks stay in
// L1 (2 x 2 KiB). `out` may be a source: a block is written only after every source's block is read.
void reduce_low(void* out_v, const void* const* srcs_v, int n, size_t count, DType dtype, ReduceOp op, void* out2_v) {
  constexpr size_t kLowBlock = 512;
  alignas(64) float acc[kLowBlock];
  alignas(64) float next[kLowBlock];
  const Kernel combine = pick(DType::Float32, op == ReduceOp::AVG ? ReduceOp::SUM : op, current_isa());
  const float inv = 1.0f / static_cast<float>(n);
  uint16_t* out = static_cast<uint16_t*>(out_v);
  uint16_t* out2 = static_cast<uint16_t*>(out2_v);
  const uint16_t* const* src = reinterpret_cast<const uint16_t* const*>(srcs_v);
  for (size_t at = 0; at < count; at += kLowBlock) {
    const size_t m = std::min(kLowBlock, count - at);
    cpu::widen_to_float(dtype, src[0] + at, acc, static_cast<int64_t>(m));
    for (int s = 1; s < n; s++) {
      cpu::widen_to_float(dtype, src[s] + at, next, static_cast<int64_t>(m));
      const void* two[2] = {acc, next};
      combine(acc, nullptr, two, 2, m, false, 1.0f, false);
    }
    if (op == ReduceOp::AVG) {
      for (size_t i = 0; i < m; i++) acc[i] *= inv;
    }
    cpu::narrow_from_float(dtype, acc, out + at, static_cast<int64_t>(m));
    if (out2 != nullptr) std::memcpy(out2 + at, out + at, m * sizeof(uint16_t));
  }
}

}  // namespace

void reduce_sources(void* out, const void* const* srcs, int nsrc, size_t count, DType dtype, ReduceOp op, void* out2,
                    bool stream_out) {
  DDP4J_CHECK_ARG(op != ReduceOp::AVG || dtype != DType::Int64,
                  "allReduce: ReduceOp.AVG needs a floating dtype (float32, bfloat16, float16), got ", dtype_name(dtype));
  DDP4J_CHECK_ARG(static_cast<int>(op) >= 0 && static_cast<int>(op) < kNumReduceOps, "allReduce: unknown ReduceOp");
  DDP4J_CHECK_ARG(nsrc >= 1, "reduce_sources: no sources");
  if (count == 0) return;
  if (is_reduced_float(dtype)) {
    // Cached stores only (stream_out is a speed hint): nothing to fence.
    reduce_low(out, srcs, nsrc, count, dtype, op, out2);
    return;
  }
  // AVG as the Gloo path: the sum times the float reciprocal of the number of ranks.
  pick(dtype, op, current_isa())(out, out2, srcs, nsrc, count, op == ReduceOp::AVG,
                                 1.0f / static_cast<float>(nsrc), stream_out);
}

void copy_bytes(void* dst, const void* src, size_t bytes, bool stream) {
  if (bytes == 0 || dst == src) return;
  if (stream && reinterpret_cast<uintptr_t>(dst) % 64 == 0) {
    switch (current_isa()) {
      case Isa::Avx512: copy_avx512<true>(static_cast<char*>(dst), static_cast<const char*>(src), bytes); return;
      case Isa::Avx2: copy_avx2<true>(static_cast<char*>(dst), static_cast<const char*>(src), bytes); return;
      default: break;
    }
  }
  switch (current_isa()) {
    case Isa::Avx512: copy_avx512<false>(static_cast<char*>(dst), static_cast<const char*>(src), bytes); break;
    case Isa::Avx2: copy_avx2<false>(static_cast<char*>(dst), static_cast<const char*>(src), bytes); break;
    default: std::memcpy(dst, src, bytes);
  }
}

const char* reduce_isa() {
  switch (current_isa()) {
    case Isa::Avx512: return "avx512";
    case Isa::Avx2: return "avx2";
    default: return "scalar";
  }
}

void force_scalar_reduce(bool scalar) { g_force_scalar.store(scalar, std::memory_order_relaxed); }

}  // namespace ddp4j::shm
