// ctest: autocast's GEMMs (cpu/gemm.h gemm_block / gemm): every transpose pair, edge sizes that
// leave partial register tiles, odd k, several k slices, alpha and beta (beta 0 must not read C).
// Each kernel is checked against a double-precision sum of the products of the operands rounded
// as half.h rounds them (bound: 4 * 2^-24 * k * Σ|a·b|, float32 summation error); the widening
// kernel must equal the float32 GEMM (cblas_sgemm) on pre-rounded operands bit for bit; the vdpbf16ps kernel (where
// the CPU has AVX512-BF16, else skipped with the reason) must agree with the widening kernel within
// the same bound; the threaded gemm's bits do not depend on the thread count. float16 always widens.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <vector>

#include "cpu/gemm.h"
#include "ddp4j/half.h"
#include "ddp4j/parallel.h"
#include "test_util.h"

using namespace ddp4j;

namespace {

float round_low(DType low, float v) {
  return low == DType::BFloat16 ? bfloat16_to_float(float_to_bfloat16(v)) : float16_to_float(float_to_float16(v));
}

std::vector<float> random_matrix(int64_t n, uint64_t seed) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    v[static_cast<size_t>(i)] = static_cast<float>(static_cast<double>(test::mix(seed * 7919 + static_cast<uint64_t>(i)) % 20001) / 10000.0 - 1.0);
  }
  return v;
}

struct Case {
  int64_t m, n, k;
  bool ta, tb;
  float alpha, beta;
};

/** C from kernel on fresh copies; checks against the rounded-product reference; returns C. */
std::vector<float> run(DType low, const Case& c, const std::vector<float>& a, const std::vector<float>& b,
                       const std::vector<float>& c0) {
  const int64_t lda = c.ta ? c.m : c.k, ldb = c.tb ? c.k : c.n;
  std::vector<float> out = c0;
  cpu::gemm_block(low, c.ta, c.tb, c.m, c.n, c.k, c.alpha, a.data(), lda, b.data(), ldb, c.beta, out.data(), c.n);
  for (int64_t i = 0; i < c.m; ++i) {
    for (int64_t j = 0; j < c.n; ++j) {
      double ref = 0, mag = 0;
      for (int64_t p = 0; p < c.k; ++p) {
        const float av = round_low(low, c.ta ? a[p * lda + i] : a[i * lda + p]);
        const float bv = round_low(low, c.tb ? b[j * ldb + p] : b[p * ldb + j]);
        ref += static_cast<double>(av) * bv;
        mag += std::fabs(static_cast<double>(av) * bv);
      }
      const double base = c.beta == 0.0f ? 0.0 : static_cast<double>(c.beta) * c0[i * c.n + j];
      ref = c.alpha * ref + base;
      const double tol = 4.0 * std::ldexp(1.0, -24) * static_cast<double>(c.k + 2) * (std::fabs(c.alpha) * mag + std::fabs(base)) + 1e-30;
      const double got = out[i * c.n + j];
      if (!(std::fabs(got - ref) <= tol)) {
        std::printf("m=%lld n=%lld k=%lld ta=%d tb=%d beta=%g kernel=%s: C[%lld,%lld]=%.9g, reference %.9g (tol %.3g)\n",
                    (long long)c.m, (long long)c.n, (long long)c.k, c.ta, c.tb, c.beta,
                    low == DType::BFloat16 ? cpu::bf16_kernel_name(cpu::bf16_kernel()) : "widen (float16)",
                    (long long)i, (long long)j, got, ref, tol);
        CHECK(false);
        return out;
      }
    }
  }
  return out;
}

void check_cases(DType low) {
  const Case cases[] = {{1, 1, 1, false, false, 1.f, 0.f},   {13, 33, 7, false, true, 1.f, 0.f},
                        {13, 33, 7, true, false, 1.5f, 0.5f}, {37, 70, 301, true, true, 1.f, 1.f},
                        {100, 65, 513, false, false, -0.5f, 0.f}, {150, 1030, 260, false, true, 1.f, 1.f},
                        {24, 64, 512, true, false, 1.f, 0.f}, {12, 32, 2, true, true, 2.f, 0.25f}};
  const bool has_bf16 = cpu::bf16_kernel_supported(cpu::LowPrecisionKernel::Avx512Bf16);
  if (low == DType::BFloat16 && !has_bf16) {
    std::printf("skipped the avx512bf16 kernel: this CPU has no AVX512-BF16 (avx512_bf16); the widen kernel is tested\n");
  }
  uint64_t seed = 1;
  for (const Case& c : cases) {
    const auto a = random_matrix(c.m * c.k, seed++), b = random_matrix(c.k * c.n, seed++);
    auto c0 = random_matrix(c.m * c.n, seed++);
    if (c.beta == 0.0f) c0.assign(c0.size(), std::numeric_limits<float>::quiet_NaN());  // must not be read
    cpu::set_bf16_kernel(cpu::LowPrecisionKernel::Widen);
    const auto widened = run(low, c, a, b, c0);
    // Widen is cblas_sgemm on the rounded operands, bit for bit.
    std::vector<float> ra(a.size()), rb(b.size()), expect = c0;
    for (size_t i = 0; i < a.size(); ++i) ra[i] = round_low(low, a[i]);
    for (size_t i = 0; i < b.size(); ++i) rb[i] = round_low(low, b[i]);
    cpu::gemm_block(DType::Float32, c.ta, c.tb, c.m, c.n, c.k, c.alpha, ra.data(), c.ta ? c.m : c.k, rb.data(),
                    c.tb ? c.k : c.n, c.beta, expect.data(), c.n);
    CHECK(std::memcmp(widened.data(), expect.data(), expect.size() * sizeof(float)) == 0);
    if (low == DType::BFloat16 && has_bf16) {
      cpu::set_bf16_kernel(cpu::LowPrecisionKernel::Avx512Bf16);
      const auto dot = run(low, c, a, b, c0);
      double worst = 0;
      for (size_t i = 0; i < dot.size(); ++i) worst = std::max(worst, std::fabs(static_cast<double>(dot[i]) - widened[i]));
      std::printf("m=%lld n=%lld k=%lld ta=%d tb=%d: |avx512bf16 - widen| <= %.3g\n", (long long)c.m, (long long)c.n,
                  (long long)c.k, c.ta, c.tb, worst);
    }
  }
}

/** The threaded gemm gives the same bits for any thread count (its blocks depend on the shape only). */
void check_threads() {
  const int64_t m = 300, n = 520, k = 130;
  const auto a = random_matrix(m * k, 71), b = random_matrix(k * n, 72);
  for (auto kernel : {cpu::LowPrecisionKernel::Widen, cpu::LowPrecisionKernel::Avx512Bf16}) {
    if (!cpu::bf16_kernel_supported(kernel)) continue;
    cpu::set_bf16_kernel(kernel);
    std::vector<float> one(static_cast<size_t>(m * n)), many(one.size());
    set_num_threads(1);
    cpu::gemm(DType::BFloat16, false, false, m, n, k, 1.f, a.data(), k, b.data(), n, 0.f, one.data(), n);
    set_num_threads(3);
    cpu::gemm(DType::BFloat16, false, false, m, n, k, 1.f, a.data(), k, b.data(), n, 0.f, many.data(), n);
    CHECK(std::memcmp(one.data(), many.data(), one.size() * sizeof(float)) == 0);
  }
}

}  // namespace

int main() {
  check_threads();
  check_cases(DType::BFloat16);
  check_cases(DType::Float16);
  return test_failures();
}
