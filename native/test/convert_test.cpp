// ctest: the float32 <-> bfloat16 / float16 conversions (half.h, cpu/convert.cpp, ops::to_dtype).
// The scalar functions round to nearest even (checked against both neighbours of every result),
// widen exactly and round-trip every 16-bit value; each vector path (AVX2, AVX-512, as far as this
// CPU has them) gives the scalar bits on every 16-bit input and on a million float32 patterns
// covering each exponent with the rounding ties of both formats; the bits do not depend on the
// thread count; int64 and same-dtype conversions behave as documented. PyTorch's own bits are
// checked by the Java golden test (LowPrecisionGoldenTest).
#include <cmath>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "cpu/convert.h"
#include "ddp4j/half.h"
#include "ddp4j/ops.h"
#include "ddp4j/parallel.h"
#include "test_util.h"

using namespace ddp4j;

namespace {

using Narrow = uint16_t (*)(float);
using Widen = float (*)(uint16_t);

/**
 * Float32 patterns: every upper half (sign, exponent, top mantissa bits) with lower halves that
 * put bfloat16 ties (0x8000) and float16 ties (bit 12 and above for normal halves, higher for
 * subnormal ones) and their neighbours in reach, plus mixed ones.
 */
std::vector<uint32_t> float_patterns() {
  const uint32_t lows[] = {0x0000, 0x0001, 0x0fff, 0x1000, 0x1001, 0x1fff, 0x2000, 0x3000,
                           0x4000, 0x7fff, 0x8000, 0x8001, 0xc000, 0xefff, 0xf000, 0xffff};
  std::vector<uint32_t> out;
  for (uint32_t hi = 0; hi < 0x10000; ++hi) {
    for (uint32_t lo : lows) out.push_back((hi << 16) | lo);
    out.push_back((hi << 16) | static_cast<uint32_t>(test::mix(hi) & 0xffff));
  }
  return out;
}

bool is_nan16(uint16_t h, bool bf16) {
  return bf16 ? (h & 0x7fff) > 0x7f80 : (h & 0x7fff) > 0x7c00;
}

/** h is a correctly rounded (nearest, ties to even) encoding of finite x: no neighbour is nearer. */
bool nearest_even(float x, uint16_t h, Narrow narrow, Widen widen, bool bf16) {
  (void)narrow;
  const double v = widen(h);
  const uint16_t sign = h & 0x8000, mag = h & 0x7fff;
  const uint16_t inf = bf16 ? 0x7f80 : 0x7c00;
  if (mag == inf) {
    // Overflow: x must be at least halfway from the largest finite value to the next power of two.
    const double largest = widen(static_cast<uint16_t>(inf - 1));
    const double limit = largest + (largest - widen(static_cast<uint16_t>(inf - 2))) / 2;
    return std::fabs(static_cast<double>(x)) >= limit && (sign != 0) == std::signbit(x);
  }
  if (std::signbit(v) != std::signbit(x)) return false;  // the sign is kept, zeros included
  const double err = std::fabs(static_cast<double>(x) - v);
  for (int d : {-1, 1}) {
    const int m = static_cast<int>(mag) + d;
    if (m < 0 || m > inf) continue;
    const double w = widen(static_cast<uint16_t>(sign | m));
    const double other = std::fabs(static_cast<double>(x) - w);
    if (other < err) return false;
    if (other == err && (mag & 1)) return false;  // a tie must go to the even encoding
  }
  return true;
}

void check_scalar_rounding() {
  int bad_bf16 = 0, bad_fp16 = 0;
  for (uint32_t u : float_patterns()) {
    const float x = float_from_bits(u);
    const uint16_t b = float_to_bfloat16(x), f = float_to_float16(x);
    if (std::isnan(x)) {
      if (b != 0xffff) ++bad_bf16;
      if (f != (((u >> 16) & 0x8000) | 0x7e00)) ++bad_fp16;
      continue;
    }
    if (!nearest_even(x, b, float_to_bfloat16, bfloat16_to_float, true)) ++bad_bf16;
    if (!nearest_even(x, f, float_to_float16, float16_to_float, false)) ++bad_fp16;
  }
  if (bad_bf16 || bad_fp16) std::fprintf(stderr, "rounding: %d bfloat16, %d float16 wrong\n", bad_bf16, bad_fp16);
  CHECK(bad_bf16 == 0);
  CHECK(bad_fp16 == 0);
  // A few values by hand: ties to even, the float16 overflow point, the smallest subnormals.
  CHECK(float_to_bfloat16(float_from_bits(0x3f808000)) == 0x3f80);  // tie, even below
  CHECK(float_to_bfloat16(float_from_bits(0x3f818000)) == 0x3f82);  // tie, even above
  CHECK(float_to_bfloat16(float_from_bits(0x7f7fffff)) == 0x7f80);  // FLT_MAX rounds to inf
  CHECK(float_to_float16(65504.0f) == 0x7bff);
  CHECK(float_to_float16(65519.996f) == 0x7bff);
  CHECK(float_to_float16(65520.0f) == 0x7c00);
  CHECK(float_to_float16(std::ldexp(1.0f, -24)) == 0x0001);
  CHECK(float_to_float16(std::ldexp(1.0f, -25)) == 0x0000);                         // tie to even: 0
  CHECK(float_to_float16(std::ldexp(1.5f, -25)) == 0x0001);
  CHECK(float_to_float16(std::ldexp(3.0f, -25)) == 0x0002);                         // 1.5 units: tie to 2
  CHECK(float_to_float16(-0.0f) == 0x8000);
  CHECK(float_to_bfloat16(float_from_bits(0x00000001)) == 0x0000);                  // float32 subnormal
  CHECK(float_to_bfloat16(float_from_bits(0x00010000)) == 0x0001);                  // bfloat16 subnormal
}

void check_scalar_widening() {
  int bad = 0;
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const uint16_t b = static_cast<uint16_t>(h);
    const float fb = bfloat16_to_float(b), ff = float16_to_float(b);
    if (float_bits(fb) != h << 16) ++bad;  // bfloat16 is float32's upper half
    if (!is_nan16(b, true) && float_to_bfloat16(fb) != b) ++bad;
    if (!is_nan16(b, false) && float_to_float16(ff) != b) ++bad;
    if (is_nan16(b, false) && (!std::isnan(ff) || (float_bits(ff) & 0x400000) == 0 ||
                               ((float_bits(ff) >> 13) & 0x1ff) != (h & 0x1ff) || (float_bits(ff) >> 31) != (h >> 15))) {
      ++bad;  // a float16 NaN widens quiet (bit 22 set), keeping its sign and the rest of its payload
    }
  }
  CHECK(bad == 0);
  CHECK(float16_to_float(0x0001) == std::ldexp(1.0f, -24));
  CHECK(float16_to_float(0x03ff) == std::ldexp(1023.0f, -24));
  CHECK(float16_to_float(0x7bff) == 65504.0f);
  CHECK(std::isinf(float16_to_float(0xfc00)) && float16_to_float(0xfc00) < 0);
}

/** ops::to_dtype of a CPU tensor holding n values starting at pattern `from` of `values`. */
Tensor converted(const Tensor& src, DType dtype) { return ops::to_dtype(src, dtype); }

Tensor tensor_of_bits32(const std::vector<uint32_t>& bits) {
  Tensor t = Tensor::empty({static_cast<int64_t>(bits.size())}, DType::Float32);
  std::memcpy(t.raw_data(), bits.data(), t.nbytes());
  return t;
}

Tensor tensor_of_all16(DType dtype) {
  Tensor t = Tensor::empty({0x10000}, dtype);
  for (uint32_t h = 0; h < 0x10000; ++h) t.data<uint16_t>()[h] = static_cast<uint16_t>(h);
  return t;
}

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.nbytes() == b.nbytes() && std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0;
}

/** Every path gives the scalar path's bits, on the whole tensors and on ragged, misaligned slices. */
void check_paths_agree() {
  const std::vector<uint32_t> patterns = float_patterns();
  const Tensor floats = tensor_of_bits32(patterns);
  const Tensor all_bf16 = tensor_of_all16(DType::BFloat16), all_fp16 = tensor_of_all16(DType::Float16);
  const cpu::ConvertPath original = cpu::convert_path();
  cpu::set_convert_path(cpu::ConvertPath::Scalar);
  const Tensor ref_bf16 = converted(floats, DType::BFloat16), ref_fp16 = converted(floats, DType::Float16);
  const Tensor ref_from_bf16 = converted(all_bf16, DType::Float32), ref_from_fp16 = converted(all_fp16, DType::Float32);
  const Tensor ref_bf16_fp16 = converted(all_bf16, DType::Float16), ref_fp16_bf16 = converted(all_fp16, DType::BFloat16);
  // The scalar kernel is half.h element by element.
  bool scalar_ok = true;
  for (size_t i = 0; i < patterns.size(); ++i) {
    const float x = float_from_bits(patterns[i]);
    scalar_ok &= ref_bf16.data<uint16_t>()[i] == float_to_bfloat16(x) && ref_fp16.data<uint16_t>()[i] == float_to_float16(x);
  }
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const uint16_t b = static_cast<uint16_t>(h);
    scalar_ok &= float_bits(ref_from_bf16.data<float>()[h]) == float_bits(bfloat16_to_float(b));
    scalar_ok &= float_bits(ref_from_fp16.data<float>()[h]) == float_bits(float16_to_float(b));
    scalar_ok &= ref_bf16_fp16.data<uint16_t>()[h] == bfloat16_to_float16(b);
    scalar_ok &= ref_fp16_bf16.data<uint16_t>()[h] == float16_to_bfloat16(b);
  }
  CHECK(scalar_ok);
  int paths = 0;
  for (cpu::ConvertPath path : {cpu::ConvertPath::Avx2, cpu::ConvertPath::Avx512}) {
    if (!cpu::convert_path_supported(path)) {
      std::printf("convert_test: this CPU has no %s path, not checked\n", cpu::convert_path_name(path));
      continue;
    }
    ++paths;
    cpu::set_convert_path(path);
    CHECK(cpu::convert_path() == path);
    const char* name = cpu::convert_path_name(path);
    const bool ok = same_bits(converted(floats, DType::BFloat16), ref_bf16) &&
                    same_bits(converted(floats, DType::Float16), ref_fp16) &&
                    same_bits(converted(all_bf16, DType::Float32), ref_from_bf16) &&
                    same_bits(converted(all_fp16, DType::Float32), ref_from_fp16) &&
                    same_bits(converted(all_bf16, DType::Float16), ref_bf16_fp16) &&
                    same_bits(converted(all_fp16, DType::BFloat16), ref_fp16_bf16);
    if (!ok) std::fprintf(stderr, "convert_test: the %s path differs from the scalar one\n", name);
    CHECK(ok);
    // Slices starting at odd elements with lengths that leave every possible vector tail.
    bool tails_ok = true;
    for (int64_t offset : {1, 3, 7}) {
      for (int64_t n : {0, 1, 5, 8, 15, 16, 17, 31, 33, 100}) {
        const Tensor f = floats.flat_slice(offset * 1001, {n});
        const Tensor b = all_fp16.flat_slice(0x7bf0 + offset, {n});  // around the largest halves and inf/NaN
        tails_ok &= same_bits(converted(f, DType::BFloat16), ref_bf16.flat_slice(offset * 1001, {n}));
        tails_ok &= same_bits(converted(f, DType::Float16), ref_fp16.flat_slice(offset * 1001, {n}));
        tails_ok &= same_bits(converted(b, DType::Float32), ref_from_fp16.flat_slice(0x7bf0 + offset, {n}));
      }
    }
    CHECK(tails_ok);
  }
  std::printf("convert_test: %d vector path(s) checked against the scalar one\n", paths);
  cpu::set_convert_path(original);
}

void check_threads() {
  const std::vector<uint32_t> patterns = float_patterns();
  const Tensor floats = tensor_of_bits32(patterns);
  const int before = get_num_threads();
  set_num_threads(1);
  const Tensor one = converted(floats, DType::Float16), one_back = converted(one, DType::Float32);
  for (int threads : {2, 3}) {
    set_num_threads(threads);
    CHECK(same_bits(converted(floats, DType::Float16), one));
    CHECK(same_bits(converted(one, DType::Float32), one_back));
  }
  set_num_threads(before);
}

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

void check_ops_contract() {
  Tensor f = Tensor::zeros({3}, DType::Float32);
  CHECK(ops::to_dtype(f, DType::Float32).raw_data() == f.raw_data());  // the same tensor
  const Tensor b = ops::to_dtype(f, DType::BFloat16);
  CHECK(b.dtype() == DType::BFloat16 && b.shape() == f.shape() && b.nbytes() == 6);
  const std::string m = error_of([&] { ops::to_dtype(f, DType::Int64); });
  CHECK(m.find("to(int64) of float32[3] on cpu is not supported yet") != std::string::npos);
  Tensor labels = Tensor::zeros({2}, DType::Int64);
  CHECK(error_of([&] { ops::to_dtype(labels, DType::BFloat16); }).find("not supported yet") != std::string::npos);
  // The float32 ops name the 16-bit dtype and the fix.
  const std::string relu = error_of([&] { ops::relu_forward(b); });
  CHECK(relu.find("relu of bfloat16 is not supported yet: convert with tensor.to(DType.FLOAT32)") != std::string::npos);
  // fill rounds through float32 to the 16-bit type, as torch.full.
  Tensor h = Tensor::empty({4}, DType::Float16);
  ops::fill_(h, 65520.0);
  CHECK(h.data<uint16_t>()[3] == 0x7c00);
  ops::fill_(h, 1.0 / 3.0);
  CHECK(h.data<uint16_t>()[0] == float_to_float16(static_cast<float>(1.0 / 3.0)));
}

}  // namespace

int main() {
  check_scalar_rounding();
  check_scalar_widening();
  check_paths_agree();
  check_threads();
  check_ops_contract();
  return test_failures();
}
