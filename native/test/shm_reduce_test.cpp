// ctest: the shared-memory transport's reduction kernels. The vector path picked at run time
// (AVX-512 or AVX2) gives the same bits as the scalar path and as a plain left-to-right loop, for
// every op, both dtypes, several source counts and lengths that exercise every tail, with and
// without the second output, with cached stores and with non-temporal stores into the first output
// (the segment's way when they are faster), into an aligned output and a misaligned one (which
// falls back to cached stores); copy_bytes likewise. bfloat16 and float16 reduce in float32 and
// round once (check_low).
#include <cstdint>
#include <cstdio>
#include <algorithm>
#include <cstring>
#include <type_traits>
#include <vector>

#include "comm/local/shm/shm_reduce.h"
#include "ddp4j/errors.h"
#include "ddp4j/half.h"
#include "test_util.h"

using ddp4j::test::mix;

using namespace ddp4j;

namespace {

template <class T>
T plain(T a, T b, ReduceOp op) {
  switch (op) {
    case ReduceOp::PRODUCT: return (T)((std::is_same<T, float>::value) ? (T)(a * b) : (T)((uint64_t)a * (uint64_t)b));
    case ReduceOp::MIN: return b < a ? b : a;
    case ReduceOp::MAX: return b > a ? b : a;
    default: return (T)((std::is_same<T, float>::value) ? (T)(a + b) : (T)((uint64_t)a + (uint64_t)b));
  }
}

template <class T>
void check_op(DType dtype, ReduceOp op, int nsrc, size_t count) {
  std::vector<std::vector<T>> src(nsrc, std::vector<T>(count));
  for (int s = 0; s < nsrc; s++) {
    for (size_t i = 0; i < count; i++) {
      const uint64_t h = mix(s * 1000003ULL + i);
      if constexpr (std::is_same<T, float>::value) {
        const float u = static_cast<float>(h >> 40) / 16777216.0f;
        src[s][i] = op == ReduceOp::PRODUCT ? 0.75f + 0.5f * u : (2 * u - 1) * static_cast<float>(1 << (h & 7));
        if (i % 97 == 5) src[s][i] = std::nanf("");  // NaN follows the Gloo path's rule, on every path
      } else {
        src[s][i] = static_cast<int64_t>(h);
      }
    }
  }
  std::vector<const void*> ptrs;
  for (auto& v : src) ptrs.push_back(v.data());
  std::vector<T> expected(count), vec(count), vec2(count), scalar(count), scalar2(count);
  for (size_t i = 0; i < count; i++) {
    T a = src[0][i];
    for (int s = 1; s < nsrc; s++) a = plain(a, src[s][i], op);
    if constexpr (std::is_same<T, float>::value) {
      if (op == ReduceOp::AVG) a *= 1.0f / static_cast<float>(nsrc);
    }
    expected[i] = a;
  }
  shm::reduce_sources(vec.data(), ptrs.data(), nsrc, count, dtype, op, vec2.data());
  shm::force_scalar_reduce(true);
  shm::reduce_sources(scalar.data(), ptrs.data(), nsrc, count, dtype, op, count % 2 ? scalar2.data() : nullptr);
  if (count % 2 == 0) scalar2 = expected;
  shm::force_scalar_reduce(false);
  // Non-temporal stores into a 64-byte aligned output (the way into a segment slot), and into one
  // 8 bytes off (not aligned: cached stores), each with the second output.
  std::vector<T> streamed(count + 64 / sizeof(T) + 8), streamed2(count);
  T* aligned = streamed.data();
  while (reinterpret_cast<uintptr_t>(aligned) % 64 != 0) aligned++;
  shm::reduce_sources(aligned, ptrs.data(), nsrc, count, dtype, op, streamed2.data(), /*stream_out=*/true);
  bool ok_stream = std::memcmp(aligned, expected.data(), count * sizeof(T)) == 0 &&
                   std::memcmp(streamed2.data(), expected.data(), count * sizeof(T)) == 0;
  T* misaligned = reinterpret_cast<T*>(reinterpret_cast<char*>(aligned) + 8);
  shm::reduce_sources(misaligned, ptrs.data(), nsrc, count, dtype, op, nullptr, /*stream_out=*/true);
  ok_stream = ok_stream && std::memcmp(misaligned, expected.data(), count * sizeof(T)) == 0;
  const bool ok = std::memcmp(vec.data(), expected.data(), count * sizeof(T)) == 0 &&
                  std::memcmp(scalar.data(), expected.data(), count * sizeof(T)) == 0 &&
                  std::memcmp(vec2.data(), expected.data(), count * sizeof(T)) == 0 &&
                  std::memcmp(scalar2.data(), expected.data(), count * sizeof(T)) == 0 && ok_stream;
  if (!ok) std::fprintf(stderr, "mismatch: %s %s nsrc=%d count=%zu\n", dtype_name(dtype), reduce_op_name(op), nsrc, count);
  CHECK(ok);
}

// bfloat16 / float16: the result must be the float32 reduction of the widened sources (left to
// right, AVG times 1.0f / nsrc) rounded once to the 16-bit type, on the vector and the scalar
// paths, into a separate output, in place into source 0, and with the second output.
void check_low(DType dtype, ReduceOp op, int nsrc, size_t count) {
  const bool bf16 = dtype == DType::BFloat16;
  auto narrow = [&](float f) { return bf16 ? float_to_bfloat16(f) : float_to_float16(f); };
  auto widen = [&](uint16_t h) { return bf16 ? bfloat16_to_float(h) : float16_to_float(h); };
  std::vector<std::vector<uint16_t>> src(nsrc, std::vector<uint16_t>(count));
  for (int s = 0; s < nsrc; s++) {
    for (size_t i = 0; i < count; i++) {
      const uint64_t h = mix(s * 7919ULL + i * 31ULL + 5);
      const float u = static_cast<float>(h >> 40) / 16777216.0f;
      src[s][i] = narrow(op == ReduceOp::PRODUCT ? 0.75f + 0.5f * u : (2 * u - 1) * static_cast<float>(1 << (h & 7)));
    }
  }
  std::vector<uint16_t> expected(count);
  for (size_t i = 0; i < count; i++) {
    float a = widen(src[0][i]);
    for (int s = 1; s < nsrc; s++) a = plain(a, widen(src[s][i]), op);
    if (op == ReduceOp::AVG) a *= 1.0f / static_cast<float>(nsrc);
    expected[i] = narrow(a);
  }
  for (bool scalar : {false, true}) {
    shm::force_scalar_reduce(scalar);
    std::vector<const void*> ptrs;
    for (auto& v : src) ptrs.push_back(v.data());
    std::vector<uint16_t> out(count), out2(count);
    shm::reduce_sources(out.data(), ptrs.data(), nsrc, count, dtype, op, out2.data(), /*stream_out=*/true);
    bool ok = out == expected && out2 == expected;
    std::vector<uint16_t> in_place = src[0];
    ptrs[0] = in_place.data();
    shm::reduce_sources(in_place.data(), ptrs.data(), nsrc, count, dtype, op);
    ok = ok && in_place == expected;
    if (!ok) {
      std::fprintf(stderr, "mismatch: %s %s nsrc=%d count=%zu scalar=%d\n", dtype_name(dtype), reduce_op_name(op), nsrc,
                   count, scalar);
    }
    CHECK(ok);
  }
  shm::force_scalar_reduce(false);
}

}  // namespace

int main() {
  std::printf("reduction kernel: %s\n", shm::reduce_isa());
  const size_t counts[] = {0, 1, 7, 15, 16, 17, 63, 64, 65, 1001, 4099};
  for (int nsrc : {1, 2, 3, 4, 5}) {
    for (size_t count : counts) {
      for (ReduceOp op : {ReduceOp::SUM, ReduceOp::AVG, ReduceOp::PRODUCT, ReduceOp::MIN, ReduceOp::MAX}) {
        check_op<float>(DType::Float32, op, nsrc, count);
        if (op != ReduceOp::AVG) check_op<int64_t>(DType::Int64, op, nsrc, count);
        check_low(DType::BFloat16, op, nsrc, count);
        check_low(DType::Float16, op, nsrc, count);
      }
    }
  }
  // copy_bytes: every length around the vector widths, at unaligned offsets.
  {
    std::vector<unsigned char> src(5000), dst(5000);
    for (size_t i = 0; i < src.size(); i++) src[i] = static_cast<unsigned char>(mix(i));
    // Offsets from a 64-byte boundary: 0 is where non-temporal stores apply, the others fall back.
    unsigned char* base = dst.data() + 1;  // one byte before it stays readable
    while (reinterpret_cast<uintptr_t>(base) % 64 != 0) base++;
    for (bool stream : {false, true}) {
      for (size_t n : {0, 1, 31, 32, 33, 63, 64, 65, 127, 128, 129, 255, 256, 257, 1000, 4093}) {
        for (size_t off : {0, 1, 16, 63}) {
          std::fill(dst.begin(), dst.end(), 0xAB);
          shm::copy_bytes(base + off, src.data() + 3, n, stream);
          bool ok = std::memcmp(base + off, src.data() + 3, n) == 0 && base[off - 1] == 0xAB && base[off + n] == 0xAB;
          if (!ok) std::fprintf(stderr, "copy_bytes mismatch: n=%zu off=%zu stream=%d\n", n, off, stream);
          CHECK(ok);
        }
      }
    }
  }
  // AVG on int64 is refused, as on the Gloo path.
  {
    int64_t a = 1, out = 0;
    const void* p[1] = {&a};
    bool threw = false;
    try {
      shm::reduce_sources(&out, p, 1, 1, DType::Int64, ReduceOp::AVG);
    } catch (const Error& e) {
      threw = e.kind() == ErrorKind::InvalidArgument;
    }
    CHECK(threw);
  }
  return test_failures();
}
