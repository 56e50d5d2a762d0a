// Every CUDA kernel against the CPU kernel of the same op: random inputs built on the host, the op
// run through ddp4j::ops on the CPU and, on copies moved to cuda:0 with ops::to_device, on the GPU;
// results brought back must agree to a norm-wise relative error max|gpu - cpu| / max|cpu| of 1e-5
// (int64 and bool results exactly). Shapes include odd sizes that are not multiples of the GEMM tiles,
// strided and padded convolutions and pools, and every SGD variant. A bad cross-entropy target
// on the GPU must surface as InvalidArgument at the next synchronisation.
// Plain C++: CUDA is reached only through libddp4j_cuda (its cudart is linked statically there).
// Without a GPU it prints "SKIPPED: <reason>" and exits 77 (ctest reports it as skipped).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "cuda/cuda_context.h"
#include "ddp4j/kernels.h"
#include "ddp4j/ops.h"
#include "ddp4j/transformer_ops.h"
#include "test_util.h"

using namespace ddp4j;

namespace {

const Device kGpu{DeviceType::CUDA, 0};
const Device kCpu{DeviceType::CPU, 0};
constexpr double kTol = 1e-5;

std::mt19937 rng(12345);

Tensor uniform(const Shape& shape, float lo = -1.f, float hi = 1.f) {
  std::uniform_real_distribution<float> u(lo, hi);
  Tensor t = Tensor::empty(shape, DType::Float32);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = u(rng);
  return t;
}

/** Small integers as floats: many ties (argmax, max pool must pick the first maximum). */
Tensor integers(const Shape& shape, int lo, int hi) {
  std::uniform_int_distribution<int> u(lo, hi);
  Tensor t = Tensor::empty(shape, DType::Float32);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = static_cast<float>(u(rng));
  return t;
}

Tensor labels(int64_t n, int64_t classes) {
  std::uniform_int_distribution<int64_t> u(0, classes - 1);
  Tensor t = Tensor::empty({n}, DType::Int64);
  for (int64_t i = 0; i < n; ++i) t.data<int64_t>()[i] = u(rng);
  return t;
}

Tensor scalar(float v) {
  Tensor t = Tensor::empty({}, DType::Float32);
  *t.data<float>() = v;
  return t;
}

Tensor gpu(const Tensor& t) { return ops::to_device(t, kGpu); }
Tensor host(const Tensor& t) { return ops::to_device(t, kCpu); }
/** An independent copy on the host (ops that update in place must not share the CPU input). */
Tensor clone(const Tensor& t) {
  Tensor c = Tensor::empty(t.shape(), t.dtype());
  ops::copy_(t, c);
  return c;
}

/**
 * Compares a GPU result (any device; brought back) with the CPU reference and prints one line.
 * float32: norm-wise relative error <= tol; int64: equal.
 */
void compare(const std::string& name, const Tensor& cpu_ref, const Tensor& gpu_result, double tol = kTol) {
  Tensor got = host(gpu_result);
  if (got.shape() != cpu_ref.shape() || got.dtype() != cpu_ref.dtype()) {
    std::printf("FAIL %-60s shape/dtype %s vs %s\n", name.c_str(), got.describe().c_str(), cpu_ref.describe().c_str());
    ++test::failure_count();
    return;
  }
  if (cpu_ref.dtype() == DType::Int64 || cpu_ref.dtype() == DType::Bool) {
    const bool wide = cpu_ref.dtype() == DType::Int64;
    auto at = [wide](const Tensor& t, int64_t i) -> int64_t {
      return wide ? t.data<int64_t>()[i] : static_cast<int64_t>(t.data<uint8_t>()[i]);
    };
    int64_t bad = 0, first = -1;
    for (int64_t i = 0; i < got.numel(); ++i) {
      if (at(got, i) != at(cpu_ref, i)) {
        if (first < 0) first = i;
        ++bad;
      }
    }
    if (bad == 0) {
      std::printf("ok   %-60s exact (%lld values)\n", name.c_str(), static_cast<long long>(got.numel()));
    } else {
      std::printf("FAIL %-60s %lld of %lld differ; first at %lld: %lld vs %lld\n", name.c_str(),
                  static_cast<long long>(bad), static_cast<long long>(got.numel()), static_cast<long long>(first),
                  static_cast<long long>(at(got, first)), static_cast<long long>(at(cpu_ref, first)));
      ++test::failure_count();
    }
    return;
  }
  double max_diff = 0, max_ref = 0;
  int64_t worst = 0;
  bool nan = false;
  for (int64_t i = 0; i < got.numel(); ++i) {
    const double a = got.data<float>()[i], b = cpu_ref.data<float>()[i];
    if (std::isnan(a) != std::isnan(b)) nan = true;
    if (std::isnan(a) || std::isnan(b)) continue;
    const double d = std::fabs(a - b);
    if (d > max_diff) {
      max_diff = d;
      worst = i;
    }
    max_ref = std::max(max_ref, std::fabs(b));
  }
  const double rel = max_diff / std::max(max_ref, 1e-30);
  const bool ok = !nan && rel <= tol;
  std::printf("%s %-60s rel err %.3g (max |cpu| %.3g)", ok ? "ok  " : "FAIL", name.c_str(), rel, max_ref);
  if (!ok && got.numel() > 0) {
    std::printf("; worst at %lld: gpu %.9g cpu %.9g%s", static_cast<long long>(worst), got.data<float>()[worst],
                cpu_ref.data<float>()[worst], nan ? "; NaN mismatch" : "");
  }
  std::printf("\n");
  if (!ok) ++test::failure_count();
}

std::string shape_name(const char* op, const Shape& s) { return std::string(op) + " " + shape_str(s); }

// ---- elementwise, reductions ----------------------------------------------------------------------

void test_fill_copy() {
  for (int64_t n : {1, 1001, 300007}) {
    Tensor c = Tensor::empty({n}, DType::Float32), g = Tensor::empty({n}, DType::Float32, kGpu);
    ops::fill_(c, 3.25);
    ops::fill_(g, 3.25);
    compare(shape_name("fill float32", {n}), c, g);
    Tensor ci = Tensor::empty({n}, DType::Int64), gi = Tensor::empty({n}, DType::Int64, kGpu);
    const double big = static_cast<double>((int64_t{1} << 40) + 3);  // needs all 64 bits
    ops::fill_(ci, big);
    ops::fill_(gi, big);
    compare(shape_name("fill int64", {n}), ci, gi);

    Tensor src = uniform({n});
    Tensor dst = Tensor::empty({n}, DType::Float32, kGpu);
    ops::copy_(gpu(src), dst);  // same-device copy: the "copy" kernel
    compare(shape_name("copy float32", {n}), src, dst);
    Tensor lab = labels(n, 1000);
    Tensor dsti = Tensor::empty({n}, DType::Int64, kGpu);
    ops::copy_(gpu(lab), dsti);
    compare(shape_name("copy int64", {n}), lab, dsti);
  }
}

void test_elementwise() {
  for (int64_t n : {1, 1000, 100003}) {
    const Shape s{n};
    Tensor a = uniform(s), b = uniform(s);
    Tensor ga = gpu(a), gb = gpu(b);
    compare(shape_name("add", s), ops::add(a, b, 0.75f), ops::add(ga, gb, 0.75f));
    compare(shape_name("mul", s), ops::mul(a, b), ops::mul(ga, gb));
    compare(shape_name("scale", s), ops::scale(a, -1.5f), ops::scale(ga, -1.5f));
    compare(shape_name("relu_forward", s), ops::relu_forward(a), ops::relu_forward(ga));
    Tensor y = ops::relu_forward(a);
    compare(shape_name("relu_backward", s), ops::relu_backward(b, y), ops::relu_backward(gb, gpu(y)));
    // In place: out aliases a.
    Tensor ca = clone(a);
    ops::add_(ca, b, -2.0f);
    ops::add_(ga, gb, -2.0f);
    compare(shape_name("add_ (in place)", s), ca, ga);
    ops::scale_(ca, 0.3f);
    ops::scale_(ga, 0.3f);
    compare(shape_name("scale_ (in place)", s), ca, ga);
  }
}

void test_reductions() {
  for (int64_t n : {int64_t{1}, int64_t{1000}, (int64_t{1} << 20) + 7}) {
    Tensor a = uniform({n}, -0.5f, 1.f);
    compare(shape_name("sum", {n}), ops::sum(a), ops::sum(gpu(a)));
  }
  for (Shape s : {Shape{37, 10}, Shape{5, 1000}, Shape{1, 1}, Shape{300, 33}}) {
    Tensor x = integers(s, -3, 3);  // ties: the first maximum must win
    compare(shape_name("argmax_rows (ties)", s), ops::argmax_rows(x), ops::argmax_rows(gpu(x)));
    Tensor u = uniform(s);
    compare(shape_name("argmax_rows", s), ops::argmax_rows(u), ops::argmax_rows(gpu(u)));
  }
  // NaN counts as the maximum (torch.argmax): the first NaN of a row wins, wherever it is.
  Tensor x = uniform({3, 70});
  x.data<float>()[0 * 70 + 8] = NAN;
  x.data<float>()[0 * 70 + 24] = 100.f;
  x.data<float>()[1 * 70 + 0] = NAN;
  x.data<float>()[2 * 70 + 69] = NAN;
  x.data<float>()[2 * 70 + 40] = NAN;
  compare("argmax_rows (NaN rows)", ops::argmax_rows(x), ops::argmax_rows(gpu(x)));
}

// ---- linear ---------------------------------------------------------------------------------------

void test_linear() {
  struct Case {
    int64_t rows, in, out;
  };
  for (Case c : {Case{100, 1568, 10}, Case{1024, 1568, 10}, Case{7, 33, 65}, Case{130, 70, 129}, Case{1, 5, 1},
                 Case{64, 64, 64}, Case{33, 200, 31}, Case{3, 17, 300}}) {
    for (bool bias : {true, false}) {
      Tensor x = uniform({c.rows, c.in}), w = uniform({c.out, c.in}), b = bias ? uniform({c.out}) : Tensor();
      Tensor gy = uniform({c.rows, c.out});
      const std::string tag = "linear rows=" + std::to_string(c.rows) + " in=" + std::to_string(c.in) +
                              " out=" + std::to_string(c.out) + (bias ? " bias" : "");
      Tensor gx_ = gpu(x), gw_ = gpu(w), gb_ = bias ? gpu(b) : Tensor(), ggy = gpu(gy);
      compare(tag + " forward", ops::linear_forward(x, w, b), ops::linear_forward(gx_, gw_, gb_));
      auto cg = ops::linear_backward(gy, x, w, true, bias);
      auto gg = ops::linear_backward(ggy, gx_, gw_, true, bias);
      compare(tag + " gx", cg[0], gg[0]);
      compare(tag + " gw", cg[1], gg[1]);
      if (bias) compare(tag + " gb", cg[2], gg[2]);
    }
  }
}

// ---- conv -----------------------------------------------------------------------------------------

void test_conv() {
  struct Case {
    int64_t N, C, H, W, K, R, S;
    int sh, sw, ph, pw;
  };
  const Case cases[] = {
      {4, 1, 28, 28, 16, 5, 5, 1, 1, 2, 2},    // the ConvNet's first conv
      {4, 16, 14, 14, 32, 5, 5, 1, 1, 2, 2},   // and its second
      {64, 16, 14, 14, 32, 5, 5, 1, 1, 2, 2},  // several images per weight-gradient group
      {3, 3, 7, 9, 5, 3, 3, 2, 2, 1, 1},       // stride 2, pad 1, odd sizes
      {2, 2, 6, 5, 3, 3, 2, 3, 1, 0, 1},       // unequal strides, kernel and padding
      {1, 4, 5, 5, 2, 5, 5, 1, 1, 0, 0},       // one output pixel
      {2, 9, 9, 31, 48, 3, 3, 1, 1, 1, 1},
      {2, 17, 6, 40, 9, 3, 7, 1, 1, 0, 6},     // padding wider than half the kernel
      {1, 3, 5, 5, 20, 2, 2, 1, 1, 1, 0},
      {1, 8, 4, 4, 9, 3, 3, 1, 1, 3, 3},
      {2, 5, 11, 13, 7, 1, 1, 2, 3, 0, 0},     // 1x1 kernel, strided
      {10, 32, 100, 100, 2, 5, 5, 1, 1, 2, 2}, // 8M unfolded floats per image: two chunks
  };
  for (const Case& c : cases) {
    kernels::Conv2dGeometry g;
    g.stride_h = c.sh;
    g.stride_w = c.sw;
    g.pad_h = c.ph;
    g.pad_w = c.pw;
    char buf[200];
    std::snprintf(buf, sizeof buf, "conv x[%lld,%lld,%lld,%lld] w[%lld,%lld,%lld,%lld] s(%d,%d) p(%d,%d)",
                  (long long)c.N, (long long)c.C, (long long)c.H, (long long)c.W, (long long)c.K, (long long)c.C,
                  (long long)c.R, (long long)c.S, c.sh, c.sw, c.ph, c.pw);
    const std::string tag = buf;
    Tensor x = uniform({c.N, c.C, c.H, c.W}), w = uniform({c.K, c.C, c.R, c.S}), b = uniform({c.K});
    Tensor gx_ = gpu(x), gw_ = gpu(w), gb_ = gpu(b);
    Tensor y = ops::conv2d_forward(x, w, b, g);
    compare(tag + " forward", y, ops::conv2d_forward(gx_, gw_, gb_, g));
    compare(tag + " forward, no bias", ops::conv2d_forward(x, w, Tensor(), g),
            ops::conv2d_forward(gx_, gw_, Tensor(), g));
    Tensor gy = uniform(y.shape());
    Tensor ggy = gpu(gy);
    auto cg = ops::conv2d_backward(gy, x, w, true, true, g);
    auto gg = ops::conv2d_backward(ggy, gx_, gw_, true, true, g);
    compare(tag + " gx", cg[0], gg[0]);
    compare(tag + " gw", cg[1], gg[1]);
    compare(tag + " gb", cg[2], gg[2]);
    auto gg2 = ops::conv2d_backward(ggy, gx_, gw_, false, false, g);  // first layer: no gx, no bias
    CHECK(!gg2[0].defined() && !gg2[2].defined());
    compare(tag + " gw (no gx)", cg[1], gg2[1]);
  }
}

// ---- batch norm -----------------------------------------------------------------------------------

void test_batch_norm() {
  for (Shape s : {Shape{4, 16, 28, 28}, Shape{3, 5, 7, 3}, Shape{2, 3, 1, 1}, Shape{64, 32, 14, 14},
                  Shape{1, 7, 50, 61}}) {
    const int64_t C = s[1];
    Tensor x = uniform(s, 2.f, 5.f);  // mean far from 0: the shifted sums must not cancel
    Tensor gamma = uniform({C}, 0.5f, 1.5f), beta = uniform({C});
    Tensor rm = uniform({C}), rv = uniform({C}, 0.5f, 2.f);
    Tensor rm_gpu = gpu(rm), rv_gpu = gpu(rv);
    Tensor gxx = gpu(x), ggamma = gpu(gamma), gbeta = gpu(beta);
    const std::string tag = shape_name("batch_norm2d", s);
    auto c = ops::batch_norm2d_forward_train(x, gamma, beta, rm, rv, 0.1, 1e-5);
    auto g = ops::batch_norm2d_forward_train(gxx, ggamma, gbeta, rm_gpu, rv_gpu, 0.1, 1e-5);
    compare(tag + " train y", c[0], g[0]);
    compare(tag + " train save_mean", c[1], g[1]);
    compare(tag + " train save_invstd", c[2], g[2]);
    compare(tag + " running_mean", rm, rm_gpu);
    compare(tag + " running_var", rv, rv_gpu);
    compare(tag + " eval y", ops::batch_norm2d_forward_eval(x, gamma, beta, rm, rv, 1e-5),
            ops::batch_norm2d_forward_eval(gxx, ggamma, gbeta, rm_gpu, rv_gpu, 1e-5));
    Tensor gy = uniform(s);
    auto cb = ops::batch_norm2d_backward(gy, x, gamma, c[1], c[2]);
    auto gb = ops::batch_norm2d_backward(gpu(gy), gxx, ggamma, gpu(c[1]), gpu(c[2]));
    compare(tag + " gx", cb[0], gb[0]);
    compare(tag + " ggamma", cb[1], gb[1]);
    compare(tag + " gbeta", cb[2], gb[2]);
  }
}

/** Two ranks' statistics rows side by side, as SyncBatchNorm's all-gather leaves them (on the host). */
Tensor gathered_rows(const Tensor& a, const Tensor& b) {
  Tensor ha = host(a), hb = host(b);
  Tensor out = Tensor::empty({2, ha.numel()}, DType::Float32);
  std::copy(ha.data<float>(), ha.data<float>() + ha.numel(), out.data<float>());
  std::copy(hb.data<float>(), hb.data<float>() + hb.numel(), out.data<float>() + ha.numel());
  return out;
}

void test_sync_batch_norm() {
  // [rank 0's shape, rank 1's batch]: unequal batches, an empty rank, [N, C] input.
  for (auto [s, n1] : {std::pair{Shape{4, 16, 28, 28}, int64_t{3}}, std::pair{Shape{3, 5, 7, 3}, int64_t{0}},
                       std::pair{Shape{6, 3}, int64_t{5}}, std::pair{Shape{2, 7, 9}, int64_t{1}}}) {
    const int64_t C = s[1];
    Shape s1 = s;
    s1[0] = n1;
    Tensor x = uniform(s, 20.f, 21.f), x1 = uniform(s1, 20.f, 22.f);  // a mean far from 0
    Tensor gamma = uniform({C}, 0.5f, 1.5f), beta = uniform({C});
    Tensor rm = uniform({C}), rv = uniform({C}, 0.5f, 2.f);
    Tensor rm_gpu = gpu(rm), rv_gpu = gpu(rv);
    Tensor gxx = gpu(x);
    const std::string tag = shape_name("sync_batch_norm", s) + " + " + std::to_string(n1);
    Tensor cs = ops::sync_batch_norm_stats(x), gs = ops::sync_batch_norm_stats(gxx);
    compare(tag + " stats", cs, gs);
    compare(tag + " stats (other rank)", ops::sync_batch_norm_stats(x1), ops::sync_batch_norm_stats(gpu(x1)));
    Tensor cg = gathered_rows(cs, ops::sync_batch_norm_stats(x1));
    Tensor gg = gpu(gathered_rows(gs, ops::sync_batch_norm_stats(gpu(x1))));
    int64_t count_cpu = 0, count_gpu = 0;
    auto c = ops::sync_batch_norm_gather_stats(cg, C, rm, rv, 0.1, 1e-5, &count_cpu);
    auto g = ops::sync_batch_norm_gather_stats(gg, C, rm_gpu, rv_gpu, 0.1, 1e-5, &count_gpu);
    if (count_cpu != count_gpu) {
      std::printf("FAIL %s count %lld vs %lld\n", tag.c_str(), static_cast<long long>(count_gpu),
                  static_cast<long long>(count_cpu));
      ++test::failure_count();
    }
    compare(tag + " save_mean", c[0], g[0]);
    compare(tag + " save_invstd", c[1], g[1]);
    compare(tag + " running_mean", rm, rm_gpu);
    compare(tag + " running_var", rv, rv_gpu);
    compare(tag + " y", ops::sync_batch_norm_elemt(x, c[0], c[2], c[1], gamma, beta),
            ops::sync_batch_norm_elemt(gxx, g[0], g[2], g[1], gpu(gamma), gpu(beta)));
    Tensor residual = uniform(s);
    compare(tag + " relu(y + residual)", ops::sync_batch_norm_elemt(x, c[0], c[2], c[1], gamma, beta, residual, true),
            ops::sync_batch_norm_elemt(gxx, g[0], g[2], g[1], gpu(gamma), gpu(beta), gpu(residual), true));
    Tensor gy = uniform(s);
    auto cr = ops::sync_batch_norm_backward_reduce(gy, x, c[0], c[2], c[1]);
    auto gr = ops::sync_batch_norm_backward_reduce(gpu(gy), gxx, g[0], g[2], g[1]);
    compare(tag + " gradient sums", cr[0], gr[0]);
    compare(tag + " ggamma", cr[1], gr[1]);
    compare(tag + " gbeta", cr[2], gr[2]);
    compare(tag + " gx", ops::sync_batch_norm_backward_elemt(gy, x, c[0], c[2], c[1], gamma, cr[0], count_cpu),
            ops::sync_batch_norm_backward_elemt(gpu(gy), gxx, g[0], g[2], g[1], gpu(gamma), gr[0], count_gpu));
  }
}

// ---- max pool -------------------------------------------------------------------------------------

void test_max_pool() {
  struct Case {
    Shape x;
    int kh, kw, sh, sw, ph, pw;
  };
  const Case cases[] = {
      {{4, 16, 28, 28}, 2, 2, 2, 2, 0, 0}, {{4, 32, 14, 14}, 2, 2, 2, 2, 0, 0}, {{2, 3, 7, 9}, 3, 3, 2, 2, 1, 1},
      {{2, 2, 8, 8}, 3, 3, 1, 1, 1, 1},  // overlapping windows: the backward adds several times
      {{1, 1, 5, 7}, 2, 2, 3, 3, 1, 1},  {{3, 4, 6, 6}, 4, 4, 4, 4, 2, 2}, {{2, 3, 9, 5}, 3, 2, 2, 1, 1, 0},
  };
  for (const Case& c : cases) {
    kernels::Pool2dGeometry g{c.kh, c.kw, c.sh, c.sw, c.ph, c.pw};
    char buf[160];
    std::snprintf(buf, sizeof buf, "max_pool2d %s k(%d,%d) s(%d,%d) p(%d,%d)", shape_str(c.x).c_str(), c.kh, c.kw,
                  c.sh, c.sw, c.ph, c.pw);
    for (bool ties : {false, true}) {
      const std::string tag = std::string(buf) + (ties ? " ties" : "");
      Tensor x = ties ? integers(c.x, -2, 2) : uniform(c.x);
      auto cf = ops::max_pool2d_forward(x, g);
      auto gf = ops::max_pool2d_forward(gpu(x), g);
      compare(tag + " y", cf[0], gf[0]);
      compare(tag + " indices", cf[1], gf[1]);
      Tensor gy = uniform(cf[0].shape());
      compare(tag + " gx", ops::max_pool2d_backward(gy, cf[1], c.x), ops::max_pool2d_backward(gpu(gy), gf[1], c.x));
    }
  }
  // Dilation and ceil mode (partial last windows, the 2x2 case on odd sizes).
  struct Options {
    Shape x;
    int k, s, p, d;
    bool ceil;
  };
  for (const Options& o : {Options{{2, 3, 9, 7}, 3, 2, 1, 2, true}, Options{{2, 2, 8, 8}, 3, 1, 1, 2, false},
                           Options{{2, 3, 9, 7}, 2, 2, 0, 1, true}, Options{{1, 2, 5, 5}, 2, 2, 1, 1, true}}) {
    kernels::Pool2dGeometry g{o.k, o.k, o.s, o.s, o.p, o.p, o.d, o.d, o.ceil};
    char buf[160];
    std::snprintf(buf, sizeof buf, "max_pool2d %s k%d s%d p%d d%d%s", shape_str(o.x).c_str(), o.k, o.s, o.p, o.d,
                  o.ceil ? " ceil" : "");
    Tensor x = uniform(o.x);
    auto cf = ops::max_pool2d_forward(x, g);
    auto gf = ops::max_pool2d_forward(gpu(x), g);
    compare(std::string(buf) + " y", cf[0], gf[0]);
    compare(std::string(buf) + " indices", cf[1], gf[1]);
    Tensor gy = uniform(cf[0].shape());
    compare(std::string(buf) + " gx", ops::max_pool2d_backward(gy, cf[1], o.x),
            ops::max_pool2d_backward(gpu(gy), gf[1], o.x));
  }
}

// ---- average pools --------------------------------------------------------------------------------

void test_avg_pool() {
  struct Case {
    Shape x;
    int k, s, p;
    bool ceil, count_include_pad;
    int64_t divisor;
  };
  const Case cases[] = {
      {{4, 16, 28, 28}, 2, 2, 0, false, true, 0}, {{2, 3, 7, 7}, 3, 2, 1, false, true, 0},
      {{2, 2, 8, 9}, 3, 2, 1, true, false, 0},    {{1, 2, 8, 8}, 3, 3, 1, true, false, 0},
      {{2, 2, 5, 6}, 3, 1, 1, false, true, 4},    {{1, 1, 5, 5}, 4, 2, 2, true, true, 0},
  };
  for (const Case& c : cases) {
    kernels::Pool2dGeometry g{c.k, c.k, c.s, c.s, c.p, c.p, 1, 1, c.ceil};
    char buf[160];
    std::snprintf(buf, sizeof buf, "avg_pool2d %s k%d s%d p%d%s%s div %lld", shape_str(c.x).c_str(), c.k, c.s, c.p,
                  c.ceil ? " ceil" : "", c.count_include_pad ? "" : " nopad", static_cast<long long>(c.divisor));
    Tensor x = uniform(c.x);
    Tensor y = ops::avg_pool2d_forward(x, g, c.count_include_pad, c.divisor);
    compare(std::string(buf) + " y", y, ops::avg_pool2d_forward(gpu(x), g, c.count_include_pad, c.divisor));
    Tensor gy = uniform(y.shape());
    compare(std::string(buf) + " gx", ops::avg_pool2d_backward(gy, c.x, g, c.count_include_pad, c.divisor),
            ops::avg_pool2d_backward(gpu(gy), c.x, g, c.count_include_pad, c.divisor));
  }
}

void test_adaptive_avg_pool() {
  struct Case {
    Shape x;
    int64_t out_h, out_w;
  };
  const Case cases[] = {{{4, 64, 7, 7}, 1, 1}, {{2, 3, 7, 9}, 3, 4}, {{2, 2, 8, 8}, 2, 2}, {{1, 2, 5, 4}, 7, 6}};
  for (const Case& c : cases) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "adaptive_avg_pool2d %s -> %lldx%lld", shape_str(c.x).c_str(),
                  static_cast<long long>(c.out_h), static_cast<long long>(c.out_w));
    Tensor x = uniform(c.x);
    Tensor y = ops::adaptive_avg_pool2d_forward(x, c.out_h, c.out_w);
    compare(std::string(buf) + " y", y, ops::adaptive_avg_pool2d_forward(gpu(x), c.out_h, c.out_w));
    Tensor gy = uniform(y.shape());
    compare(std::string(buf) + " gx", ops::adaptive_avg_pool2d_backward(gy, c.x),
            ops::adaptive_avg_pool2d_backward(gpu(gy), c.x));
  }
}

// ---- losses ---------------------------------------------------------------------------------------

void test_losses() {
  for (Shape s : {Shape{1}, Shape{100, 10}, Shape{1000, 101}}) {
    Tensor in = uniform(s), target = uniform(s);
    Tensor gout = scalar(0.7f);
    const std::string tag = shape_name("mse_loss", s);
    compare(tag + " forward", ops::mse_loss_forward(in, target), ops::mse_loss_forward(gpu(in), gpu(target)));
    compare(tag + " backward", ops::mse_loss_backward(gout, in, target),
            ops::mse_loss_backward(gpu(gout), gpu(in), gpu(target)));
  }
  for (Shape s : {Shape{100, 10}, Shape{1024, 10}, Shape{37, 1000}, Shape{1, 1}, Shape{5, 33}}) {
    Tensor logits = uniform(s, -10.f, 10.f);
    // One row of huge logits: the max-subtracted softmax must stay finite.
    for (int64_t c = 0; c < s[1]; ++c) logits.data<float>()[c] += 1e4f;
    Tensor target = labels(s[0], s[1]);
    Tensor gout = scalar(1.3f);
    const std::string tag = shape_name("cross_entropy", s);
    auto c = ops::cross_entropy_forward(logits, target);
    auto g = ops::cross_entropy_forward(gpu(logits), gpu(target));
    compare(tag + " loss", c[0], g[0]);
    compare(tag + " probs", c[1], g[1]);
    compare(tag + " backward", ops::cross_entropy_backward(gout, c[1], target),
            ops::cross_entropy_backward(gpu(gout), g[1], gpu(target)));
  }
}

/** A target outside [0, C) on the GPU: no crash, InvalidArgument naming it at the next synchronisation. */
void test_bad_target() {
  for (int64_t bad : {int64_t{15}, int64_t{-7}, int64_t{-1}}) {
    Tensor logits = uniform({8, 10});
    Tensor target = labels(8, 10);
    target.data<int64_t>()[5] = bad;
    bool thrown = false, right_kind = false, names_value = false;
    try {
      auto g = ops::cross_entropy_forward(gpu(logits), gpu(target));
      cuda::synchronize(0);
    } catch (const Error& e) {
      thrown = true;
      right_kind = e.kind() == ErrorKind::InvalidArgument;
      names_value = std::string(e.what()).find(std::to_string(bad)) != std::string::npos;
      std::printf("     (message: %s)\n", e.what());
    }
    const bool ok = thrown && right_kind && names_value;
    std::printf("%s cross_entropy bad target %-42lld %s\n", ok ? "ok  " : "FAIL", static_cast<long long>(bad),
                thrown ? (right_kind ? (names_value ? "InvalidArgument at synchronize" : "message lacks the value")
                                     : "wrong error kind")
                       : "no error");
    if (!ok) ++test::failure_count();
    // The error is reported once: the next synchronisation is clean.
    bool again = false;
    try {
      cuda::synchronize(0);
    } catch (const Error&) {
      again = true;
    }
    CHECK(!again);
  }
}

// ---- sgd ------------------------------------------------------------------------------------------

void test_sgd() {
  struct Case {
    const char* name;
    kernels::SgdOptions o;
  };
  auto opts = [](double lr, double momentum, double dampening, double wd, bool nesterov) {
    kernels::SgdOptions o;
    o.lr = lr;
    o.momentum = momentum;
    o.dampening = dampening;
    o.weight_decay = wd;
    o.nesterov = nesterov;
    return o;
  };
  const Case cases[] = {
      {"plain", opts(0.1, 0, 0, 0, false)},
      {"weight decay", opts(0.1, 0, 0, 0.01, false)},
      {"momentum", opts(0.05, 0.9, 0, 0, false)},
      {"momentum + dampening + weight decay", opts(0.05, 0.9, 0.1, 1e-3, false)},
      {"nesterov + weight decay", opts(0.05, 0.9, 0, 1e-4, true)},
  };
  for (const Case& c : cases) {
    for (int64_t n : {1, 1000, 10007}) {
      Tensor p = uniform({n}), p_gpu = gpu(p);
      const bool mom = c.o.momentum != 0;
      Tensor buf = mom ? Tensor::empty({n}, DType::Float32) : Tensor();
      Tensor buf_gpu = mom ? Tensor::empty({n}, DType::Float32, kGpu) : Tensor();
      for (int step = 0; step < 3; ++step) {
        Tensor grad = uniform({n});
        ops::sgd_step_(p, grad, buf, c.o, step == 0);
        ops::sgd_step_(p_gpu, gpu(grad), buf_gpu, c.o, step == 0);
      }
      const std::string tag = std::string("sgd ") + c.name + " [" + std::to_string(n) + "] 3 steps";
      compare(tag + " param", p, p_gpu);
      if (mom) compare(tag + " momentum_buffer", buf, buf_gpu);
    }
  }
}

// ---- adam -----------------------------------------------------------------------------------------

Tensor zeros_on(int64_t n, Device device) {
  Tensor t = Tensor::empty({n}, DType::Float32, device);
  ops::fill_(t, 0);
  return t;
}

void test_adam() {
  struct Case {
    const char* name;
    kernels::AdamOptions o;
  };
  auto opts = [](double lr, double wd, bool amsgrad, bool decoupled) {
    kernels::AdamOptions o;
    o.lr = lr;
    o.weight_decay = wd;
    o.amsgrad = amsgrad;
    o.decoupled = decoupled;
    return o;
  };
  const Case cases[] = {
      {"adam", opts(1e-3, 0, false, false)},
      {"adam + weight decay + amsgrad", opts(0.01, 0.1, true, false)},
      {"adamw", opts(1e-3, 1e-2, false, true)},
      {"adamw + amsgrad", opts(0.05, 0.1, true, true)},
  };
  for (const Case& c : cases) {
    for (int64_t n : {1, 1000, 10007}) {
      Tensor p = uniform({n}), p_gpu = gpu(p);
      Tensor m = zeros_on(n, Device()), v = zeros_on(n, Device());
      Tensor m_gpu = zeros_on(n, kGpu), v_gpu = zeros_on(n, kGpu);
      Tensor vmax = c.o.amsgrad ? zeros_on(n, Device()) : Tensor();
      Tensor vmax_gpu = c.o.amsgrad ? zeros_on(n, kGpu) : Tensor();
      for (int step = 1; step <= 3; ++step) {
        // Gradients that shrink, so amsgrad's maximum differs from the second moment.
        Tensor grad = uniform({n}, -1.f / step, 1.f / step);
        ops::adam_step_(p, grad, m, v, vmax, c.o, step);
        ops::adam_step_(p_gpu, gpu(grad), m_gpu, v_gpu, vmax_gpu, c.o, step);
      }
      const std::string tag = std::string(c.name) + " [" + std::to_string(n) + "] 3 steps";
      compare(tag + " param", p, p_gpu);
      compare(tag + " exp_avg", m, m_gpu);
      compare(tag + " exp_avg_sq", v, v_gpu);
      if (c.o.amsgrad) compare(tag + " max_exp_avg_sq", vmax, vmax_gpu);
    }
  }
}

// ---- tensor-op families: broadcast, unary, reduce, matmul, shape ---------------------------------

Tensor bools(const Shape& shape) {
  std::bernoulli_distribution u(0.5);
  Tensor t = Tensor::empty(shape, DType::Bool);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<uint8_t>()[i] = u(rng) ? 1 : 0;
  return t;
}

/** Small int64 values (ties for the comparisons). */
Tensor int64s(const Shape& shape, int64_t lo, int64_t hi) {
  std::uniform_int_distribution<int64_t> u(lo, hi);
  Tensor t = Tensor::empty(shape, DType::Int64);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<int64_t>()[i] = u(rng);
  return t;
}

std::string pair_name(const char* op, const Shape& a, const Shape& b) {
  return std::string(op) + " " + shape_str(a) + " " + shape_str(b);
}

void test_broadcast() {
  using kernels::BinaryOp;
  const std::pair<Shape, Shape> shapes[] = {
      {{1000}, {1000}},      {{4, 1, 5}, {3, 1}},       {{2, 3, 4}, {4}},          {{}, {3, 4}},
      {{7, 1, 1, 9}, {1, 6, 5, 1}}, {{2, 3, 1, 4}, {2, 1, 5, 4}}, {{33, 65}, {33, 1}}, {{0, 3}, {3}},
  };
  const char* names[] = {"add", "sub", "mul", "div", "eq", "ne", "lt", "gt", "le", "ge"};
  for (const auto& [sa, sb] : shapes) {
    Tensor a = uniform(sa), b = uniform(sb, 0.5f, 2.f);
    for (int op = 0; op <= static_cast<int>(BinaryOp::Div); ++op) {
      const auto code = static_cast<BinaryOp>(op);
      compare(pair_name(names[op], sa, sb), ops::broadcast_binary(a, b, code),
              ops::broadcast_binary(gpu(a), gpu(b), code));
    }
    Tensor fa = integers(sa, -2, 2), fb = integers(sb, -2, 2);  // ties
    Tensor ia = int64s(sa, -2, 2), ib = int64s(sb, -2, 2);
    Tensor ba = bools(sa), bb = bools(sb);
    for (int op = static_cast<int>(BinaryOp::Eq); op <= static_cast<int>(BinaryOp::Ge); ++op) {
      const auto code = static_cast<BinaryOp>(op);
      compare(pair_name(names[op], sa, sb) + " float32", ops::broadcast_binary(fa, fb, code),
              ops::broadcast_binary(gpu(fa), gpu(fb), code));
      compare(pair_name(names[op], sa, sb) + " int64", ops::broadcast_binary(ia, ib, code),
              ops::broadcast_binary(gpu(ia), gpu(ib), code));
      compare(pair_name(names[op], sa, sb) + " bool", ops::broadcast_binary(ba, bb, code),
              ops::broadcast_binary(gpu(ba), gpu(bb), code));
    }
  }
  // where: three operands broadcast together, float32 and int64.
  for (const auto& [sc, sa, sb] : {std::tuple{Shape{4, 1, 5}, Shape{3, 5}, Shape{4, 3, 1}},
                                   std::tuple{Shape{1000}, Shape{1000}, Shape{}},
                                   std::tuple{Shape{2, 1, 7}, Shape{1}, Shape{6, 1}}}) {
    Tensor c = bools(sc);
    Tensor a = uniform(sa), b = uniform(sb);
    compare(pair_name("where", sa, sb) + " cond " + shape_str(sc), ops::where(c, a, b),
            ops::where(gpu(c), gpu(a), gpu(b)));
    Tensor ia = int64s(sa, -100, 100), ib = int64s(sb, -100, 100);
    compare(pair_name("where int64", sa, sb) + " cond " + shape_str(sc), ops::where(c, ia, ib),
            ops::where(gpu(c), gpu(ia), gpu(ib)));
  }
  // masked_fill: the mask broadcast to x's shape (the causal mask of attention: [T, T] over [B, H, T, T]).
  for (const auto& [sx, sm] : {std::pair{Shape{2, 3, 16, 16}, Shape{16, 16}}, std::pair{Shape{4, 3, 5}, Shape{3, 1}},
                               std::pair{Shape{1001}, Shape{1001}}}) {
    Tensor x = uniform(sx), m = bools(sm);
    compare(pair_name("masked_fill", sx, sm), ops::masked_fill(x, m, -1e9), ops::masked_fill(gpu(x), gpu(m), -1e9));
    Tensor ix = int64s(sx, -5, 5);
    compare(pair_name("masked_fill int64", sx, sm), ops::masked_fill(ix, m, 7), ops::masked_fill(gpu(ix), gpu(m), 7));
    Tensor bx = bools(sx);
    compare(pair_name("masked_fill bool", sx, sm), ops::masked_fill(bx, m, 1), ops::masked_fill(gpu(bx), gpu(m), 1));
  }
}

void test_unary() {
  using kernels::UnaryOp;
  struct Case {
    const char* name;
    UnaryOp op;
    double scalar;
    bool positive;  // input in (0.1, 3): log, sqrt, non-integer pow
  };
  const Case cases[] = {
      {"exp", UnaryOp::Exp, 0, false},        {"log", UnaryOp::Log, 0, true},
      {"tanh", UnaryOp::Tanh, 0, false},      {"sqrt", UnaryOp::Sqrt, 0, true},
      {"neg", UnaryOp::Neg, 0, false},        {"add scalar", UnaryOp::AddScalar, 0.75, false},
      {"mul scalar", UnaryOp::MulScalar, -1.5, false}, {"div scalar", UnaryOp::DivScalar, 3.0, false},
      {"pow 2", UnaryOp::Pow, 2, false},      {"pow 3", UnaryOp::Pow, 3, false},
      {"pow 0.5", UnaryOp::Pow, 0.5, true},   {"pow -1", UnaryOp::Pow, -1, true},
      {"pow 1.7", UnaryOp::Pow, 1.7, true},   {"pow -0.5", UnaryOp::Pow, -0.5, true},
  };
  for (const Case& c : cases) {
    for (Shape s : {Shape{}, Shape{1000}, Shape{3, 77, 129}}) {
      Tensor x = c.positive ? uniform(s, 0.1f, 3.f) : uniform(s, -3.f, 3.f);
      compare(shape_name(c.name, s), ops::unary(x, c.op, c.scalar), ops::unary(gpu(x), c.op, c.scalar));
    }
  }
  Tensor b = bools({1003});
  compare("logical_not [1003]", ops::unary(b, UnaryOp::LogicalNot, 0), ops::unary(gpu(b), UnaryOp::LogicalNot, 0));
}

void test_reduce() {
  // sum / mean over dims: trailing, leading (a permuted copy), all, keepdim, an empty dim.
  const std::pair<Shape, std::vector<int64_t>> sums[] = {
      {{4, 5, 6}, {}},        {{4, 5, 6}, {1}},   {{4, 5, 6}, {0, 2}}, {{4, 5, 6}, {-1}},
      {{300, 200}, {}},       {{300, 200}, {0}},  {{7, 1000}, {1}},    {{3, 0, 4}, {1}},
      {{2, 70000}, {1}},      {{}, {}},
  };
  for (const auto& [s, dims] : sums) {
    Tensor x = uniform(s, -0.5f, 1.f);
    for (bool mean : {false, true}) {
      for (bool keep : {false, true}) {
        const std::string tag = shape_name(mean ? "mean" : "sum", s) + " dims " + shape_str(dims) + (keep ? " keepdim" : "");
        compare(tag, ops::sum_dims(x, dims, keep, mean), ops::sum_dims(gpu(x), dims, keep, mean));
      }
    }
  }
  // max over a dim: values and first indices, with ties and NaN (the first NaN wins).
  for (Shape s : {Shape{4, 5, 6}, Shape{37, 1000}, Shape{1, 1}, Shape{300, 33}}) {
    for (int64_t d = 0; d < static_cast<int64_t>(s.size()); ++d) {
      Tensor x = integers(s, -3, 3);
      if (x.numel() > 10) x.data<float>()[7] = NAN;
      auto c = ops::max_dim(x, d, false);
      auto g = ops::max_dim(gpu(x), d, false);
      const std::string tag = shape_name("max", s) + " dim " + std::to_string(d);
      compare(tag + " values", c[0], g[0]);
      compare(tag + " indices", c[1], g[1]);
    }
  }
  // softmax / log_softmax and backwards, along the last dim (a warp per row) and inner dims.
  for (Shape s : {Shape{4, 5, 6}, Shape{7, 1000}, Shape{2, 3, 16, 16}, Shape{5}, Shape{3, 50257}}) {
    for (int64_t d = 0; d < static_cast<int64_t>(s.size()); ++d) {
      Tensor x = uniform(s, -10.f, 10.f);
      for (bool log : {false, true}) {
        const std::string tag = shape_name(log ? "log_softmax" : "softmax", s) + " dim " + std::to_string(d);
        Tensor y = ops::softmax(x, d, log);
        compare(tag, y, ops::softmax(gpu(x), d, log));
        Tensor gy = uniform(s);
        compare(tag + " backward", ops::softmax_backward(gy, y, d, log),
                ops::softmax_backward(gpu(gy), gpu(y), d, log));
      }
    }
  }
  // A fully masked row (all -inf) gives NaN on both sides; a row of huge values stays finite.
  Tensor x = uniform({3, 40});
  for (int64_t c = 0; c < 40; ++c) {
    x.data<float>()[c] = -INFINITY;
    x.data<float>()[80 + c] += 1e4f;
  }
  x.data<float>()[40 + 5] = -INFINITY;
  for (bool log : {false, true}) {
    compare(log ? "log_softmax masked rows" : "softmax masked rows", ops::softmax(x, 1, log),
            ops::softmax(gpu(x), 1, log));
  }
}

void test_matmul() {
  struct Case {
    Shape a, b;
    bool ta, tb;
  };
  const Case cases[] = {
      {{5, 4}, {4, 3}, false, false},
      {{2, 3, 5, 4}, {4, 6}, false, false},             // b shared by every batch (stride 0)
      {{3, 1, 5, 4}, {1, 2, 4, 6}, false, false},       // both broadcast
      {{2, 1, 3, 4, 5}, {1, 3, 1, 5, 6}, false, false}, // batch dims that do not merge: several runs
      {{7, 33, 65}, {7, 65, 17}, false, false},
      {{7, 65, 33}, {7, 65, 17}, true, false},
      {{7, 33, 65}, {7, 17, 65}, false, true},
      {{2, 4, 64, 80}, {2, 4, 64, 80}, false, true},    // attention scores q kᵀ
      {{4, 130, 129}, {129, 70}, false, false},
      {{2, 3, 0}, {2, 0, 4}, false, false},             // k = 0: zeros
      {{1, 1}, {1, 1}, true, true},
  };
  for (const Case& c : cases) {
    Tensor a = uniform(c.a), b = uniform(c.b);
    const std::string tag = pair_name("matmul", c.a, c.b) + (c.ta ? " ta" : "") + (c.tb ? " tb" : "");
    compare(tag, ops::matmul(a, b, c.ta, c.tb), ops::matmul(gpu(a), gpu(b), c.ta, c.tb));
  }
}

void test_shape() {
  // permute / transpose of float32, int64 and bool.
  for (const auto& [s, dims] : {std::pair{Shape{2, 3, 4, 5}, std::vector<int64_t>{3, 1, 0, 2}},
                                std::pair{Shape{33, 65}, std::vector<int64_t>{1, 0}},
                                std::pair{Shape{4, 8, 3, 16}, std::vector<int64_t>{0, 2, 1, 3}},
                                std::pair{Shape{}, std::vector<int64_t>{}}}) {
    Tensor x = uniform(s), ix = int64s(s, -1000, 1000), bx = bools(s);
    const std::string tag = shape_name("permute", s) + " " + shape_str(dims);
    compare(tag, ops::permute(x, dims), ops::permute(gpu(x), dims));
    compare(tag + " int64", ops::permute(ix, dims), ops::permute(gpu(ix), dims));
    compare(tag + " bool", ops::permute(bx, dims), ops::permute(gpu(bx), dims));
  }
  Tensor t = uniform({3, 5, 7});
  compare("transpose [3, 5, 7] -1 0", ops::transpose(t, -1, 0), ops::transpose(gpu(t), -1, 0));
  // cat (with an empty piece), narrow and its backward.
  for (int64_t d = 0; d < 3; ++d) {
    Shape s0{2, 3, 4}, s1{2, 3, 4}, s2{2, 3, 4};
    s1[d] = 5;
    s2[d] = 0;
    Tensor a = uniform(s0), b = uniform(s1), c = uniform(s2);
    compare("cat dim " + std::to_string(d), ops::cat({a, b, c}, d), ops::cat({gpu(a), gpu(b), gpu(c)}, d));
    Tensor ia = int64s(s0, -9, 9), ib = int64s(s1, -9, 9);
    compare("cat int64 dim " + std::to_string(d), ops::cat({ia, ib}, d), ops::cat({gpu(ia), gpu(ib)}, d));
    Tensor x = uniform({4, 6, 5});
    const int64_t len = x.shape()[d] - 2;
    compare("narrow dim " + std::to_string(d), ops::narrow(x, d, 1, len), ops::narrow(gpu(x), d, 1, len));
    Shape gs = x.shape();
    gs[d] = len;
    Tensor gy = uniform(gs);
    compare("narrow_backward dim " + std::to_string(d), ops::narrow_backward(gy, x.shape(), d, 1),
            ops::narrow_backward(gpu(gy), x.shape(), d, 1));
  }
  // index_select with repeated indices (the backward adds them in index order) and its backward.
  for (int64_t d = 0; d < 3; ++d) {
    Tensor x = uniform({5, 6, 7});
    Tensor idx = int64s({9}, 0, x.shape()[d] - 1);
    const std::string tag = "index_select dim " + std::to_string(d);
    Tensor y = ops::index_select(x, d, idx);
    compare(tag, y, ops::index_select(gpu(x), d, gpu(idx)));
    Tensor gy = uniform(y.shape());
    compare(tag + " backward", ops::index_select_backward(gy, x.shape(), d, idx),
            ops::index_select_backward(gpu(gy), x.shape(), d, gpu(idx)));
    Tensor ix = int64s({5, 6, 7}, -50, 50);
    compare(tag + " int64", ops::index_select(ix, d, idx), ops::index_select(gpu(ix), d, gpu(idx)));
  }
  Tensor table = uniform({50, 16});
  Tensor tokens = int64s({37}, 0, 49);  // an embedding lookup and its gradient
  compare("index_select embedding rows", ops::index_select(table, 0, tokens), ops::index_select(gpu(table), 0, gpu(tokens)));
  // gather (index smaller than x off dim, larger along dim) and its scatter-add backward.
  for (int64_t d = 0; d < 3; ++d) {
    Shape xs{4, 5, 6}, is{3, 4, 5};
    is[d] = 8;
    Tensor x = uniform(xs);
    Tensor idx = int64s(is, 0, xs[d] - 1);
    const std::string tag = "gather dim " + std::to_string(d);
    compare(tag, ops::gather(x, d, idx), ops::gather(gpu(x), d, gpu(idx)));
    Tensor gy = uniform(is);
    compare(tag + " backward", ops::gather_backward(gy, xs, d, idx), ops::gather_backward(gpu(gy), xs, d, gpu(idx)));
  }
  Tensor logits = uniform({16, 1000});
  Tensor target = int64s({16, 1}, 0, 999);  // picking each row's target logit
  compare("gather targets [16, 1000]", ops::gather(logits, 1, target), ops::gather(gpu(logits), 1, gpu(target)));
  // tril / triu, float32 and bool (the causal mask), several diagonals.
  for (int64_t diagonal : {-1, 0, 2}) {
    for (bool upper : {false, true}) {
      const std::string tag = std::string(upper ? "triu" : "tril") + " diagonal " + std::to_string(diagonal);
      Tensor x = uniform({3, 4, 5});
      compare(tag, ops::triangle(x, diagonal, upper), ops::triangle(gpu(x), diagonal, upper));
      Tensor b = bools({16, 16});
      compare(tag + " bool", ops::triangle(b, diagonal, upper), ops::triangle(gpu(b), diagonal, upper));
    }
  }
}

// ---- transformer layers (embedding, layer norm, GELU, cross entropy with lse, attention) ----------

void test_layer_norm_cuda() {
  struct Case {
    Shape shape;
    int normalized_dims;
    bool weight, bias;
    float lo, hi;  // an offset range: the mean is large against the spread
  };
  for (const Case& c : {Case{{1, 1}, 1, true, true, -1.f, 1.f}, Case{{7, 33}, 1, true, true, -1.f, 1.f},
                        Case{{4, 16, 768}, 1, true, true, 5.f, 7.f}, Case{{300, 1000}, 1, false, false, -2.f, 2.f},
                        Case{{3, 5, 7, 9}, 2, true, false, -1.f, 1.f}, Case{{2000, 64}, 1, true, true, -1.f, 1.f}}) {
    const Shape norm(c.shape.end() - c.normalized_dims, c.shape.end());
    Tensor x = uniform(c.shape, c.lo, c.hi);
    Tensor w = c.weight ? uniform(norm, 0.5f, 1.5f) : Tensor(), b = c.bias ? uniform(norm) : Tensor();
    Tensor gw = c.weight ? gpu(w) : Tensor(), gb = c.bias ? gpu(b) : Tensor();
    auto cpu = ops::layer_norm_forward(x, c.normalized_dims, w, b, 1e-5);
    auto cuda = ops::layer_norm_forward(gpu(x), c.normalized_dims, gw, gb, 1e-5);
    const std::string tag = shape_name("layer_norm", c.shape) + (c.weight ? " w" : "") + (c.bias ? " b" : "");
    compare(tag + " y", cpu[0], cuda[0]);
    compare(tag + " mean", cpu[1], cuda[1]);
    compare(tag + " rstd", cpu[2], cuda[2]);
    Tensor gy = uniform(c.shape);
    auto gcpu = ops::layer_norm_backward(gy, x, c.normalized_dims, cpu[1], cpu[2], w, c.bias);
    auto gcuda = ops::layer_norm_backward(gpu(gy), gpu(x), c.normalized_dims, cuda[1], cuda[2], gw, c.bias);
    compare(tag + " dx", gcpu[0], gcuda[0]);
    if (c.weight) compare(tag + " dweight", gcpu[1], gcuda[1]);
    if (c.bias) compare(tag + " dbias", gcpu[2], gcuda[2]);
  }
}

void test_gelu_cuda() {
  for (int64_t n : {1, 1000, 100003}) {
    for (bool tanh : {false, true}) {
      Tensor x = uniform({n}, -6.f, 6.f), gy = uniform({n});
      const std::string tag = shape_name(tanh ? "gelu tanh" : "gelu none", {n});
      compare(tag + " forward", ops::gelu_forward(x, tanh), ops::gelu_forward(gpu(x), tanh));
      compare(tag + " backward", ops::gelu_backward(gy, x, tanh), ops::gelu_backward(gpu(gy), gpu(x), tanh));
    }
  }
}

void test_embedding_cuda() {
  struct Case {
    int64_t v, d;
    Shape index;
    int64_t padding_idx;
  };
  for (const Case& c : {Case{50, 33, {4, 9}, -1}, Case{50, 33, {4, 9}, 3}, Case{7, 1, {100}, 0},
                        Case{1000, 768, {4, 512}, -1}, Case{50257, 64, {3, 300}, 50256}}) {
    Tensor w = uniform({c.v, c.d});
    // Few distinct rows (many repeats: the scatter-add's order matters) plus the padding row.
    const int64_t n = shape_numel(c.index);
    Tensor idx = Tensor::empty(c.index, DType::Int64);
    std::uniform_int_distribution<int64_t> u(0, std::min<int64_t>(c.v, 20) - 1);
    for (int64_t i = 0; i < n; ++i) idx.data<int64_t>()[i] = i % 5 == 0 ? c.v - 1 : u(rng);
    if (c.padding_idx >= 0) idx.data<int64_t>()[0] = c.padding_idx;
    const std::string tag = "embedding [" + std::to_string(c.v) + ", " + std::to_string(c.d) + "] index " +
                            shape_str(c.index) + " padding_idx " + std::to_string(c.padding_idx);
    compare(tag + " forward", ops::embedding_forward(idx, w), ops::embedding_forward(gpu(idx), gpu(w)));
    Shape gshape = c.index;
    gshape.push_back(c.d);
    Tensor gout = uniform(gshape);
    compare(tag + " backward", ops::embedding_backward(gout, idx, c.v, c.padding_idx),
            ops::embedding_backward(gpu(gout), gpu(idx), c.v, c.padding_idx));
  }
  // An index outside [0, V) surfaces as InvalidArgument naming it at the next synchronisation.
  for (int64_t bad : {int64_t{50}, int64_t{-3}}) {
    Tensor idx = labels(12, 50);
    idx.data<int64_t>()[7] = bad;
    bool thrown = false, right = false;
    try {
      Tensor out = ops::embedding_forward(gpu(idx), gpu(uniform({50, 8})));
      cuda::synchronize(0);
    } catch (const Error& e) {
      thrown = true;
      right = e.kind() == ErrorKind::InvalidArgument && std::string(e.what()).find(std::to_string(bad)) != std::string::npos;
    }
    std::printf("%s embedding bad index %-47lld %s\n", thrown && right ? "ok  " : "FAIL", static_cast<long long>(bad),
                thrown ? (right ? "InvalidArgument at synchronize" : "wrong error") : "no error");
    if (!(thrown && right)) ++test::failure_count();
  }
}

void test_cross_entropy_lse_cuda() {
  constexpr int64_t kIgnore = -100;
  struct Case {
    int64_t rows, classes;
    int ignored_every;  // every k-th target is ignore_index (0: none); -1: all of them
    float offset;       // added to every logit: large logits must cancel
  };
  for (const Case& c : {Case{1, 1, 0, 0.f}, Case{37, 10, 3, 0.f}, Case{256, 50257, 4, 0.f}, Case{64, 1000, 0, 1e4f},
                        Case{9, 33, -1, 0.f}, Case{1030, 129, 7, -30.f}}) {
    Tensor logits = uniform({c.rows, c.classes}, c.offset - 5.f, c.offset + 5.f);
    Tensor target = labels(c.rows, c.classes);
    for (int64_t r = 0; r < c.rows; ++r) {
      if (c.ignored_every < 0 || (c.ignored_every > 0 && r % c.ignored_every == 1)) target.data<int64_t>()[r] = kIgnore;
    }
    const std::string tag = "cross_entropy_lse [" + std::to_string(c.rows) + ", " + std::to_string(c.classes) +
                            "] ignore every " + std::to_string(c.ignored_every) + " offset " +
                            std::to_string(static_cast<int>(c.offset));
    auto cpu = ops::cross_entropy_lse_forward(logits, target, kIgnore);
    auto cuda = ops::cross_entropy_lse_forward(gpu(logits), gpu(target), kIgnore);
    compare(tag + " loss", cpu[0], cuda[0]);
    compare(tag + " lse", cpu[1], cuda[1]);
    // Both backward kernels get the CPU's lse: exp(x - lse) at logits near 1e4 would magnify a one-ulp
    // difference between the two forwards' lse.
    Tensor gout = scalar(0.75f);
    compare(tag + " backward", ops::cross_entropy_lse_backward(gout, logits, cpu[1], target, kIgnore),
            ops::cross_entropy_lse_backward(gpu(gout), gpu(logits), gpu(cpu[1]), gpu(target), kIgnore));
  }
}

/** An additive mask [L, S] (or [B, 1, L, S]): random values, some -inf, never on key 0 (no row fully masked). */
Tensor attention_mask(const Shape& shape) {
  Tensor m = uniform(shape, -2.f, 2.f);
  const int64_t s = shape.back();
  std::uniform_int_distribution<int> u(0, 9);
  for (int64_t i = 0; i < m.numel(); ++i) {
    if (i % s != 0 && u(rng) == 0) m.data<float>()[i] = -INFINITY;
  }
  return m;
}

void test_attention_cuda() {
  struct Case {
    int64_t l, s, e, ev;
    bool causal;
    int mask;  // 0: none, 1: [L, S], 2: [B, 1, L, S]
    double dropout_p;
  };
  const int64_t batch = 2, heads = 3;
  std::vector<Case> cases;
  for (int64_t t : {1, 7, 64, 1000}) {
    for (bool causal : {false, true}) {
      for (int mask : {0, 1, 2}) {
        if (t == 1000 && mask == 1) continue;  // [L, S] and [B, 1, L, S] take the same paths
        cases.push_back(Case{t, t, 64, 64, causal, mask, 0.0});
      }
    }
  }
  cases.push_back(Case{7, 130, 24, 40, false, 1, 0.0});  // L != S, E != Ev, S not a tile multiple
  cases.push_back(Case{130, 7, 40, 24, true, 2, 0.0});
  cases.push_back(Case{64, 64, 64, 64, true, 0, 0.1});  // dropout: CPU and GPU draw the same keep mask
  cases.push_back(Case{33, 70, 16, 16, false, 1, 0.5});
  const uint64_t seed = 0x1234abcdULL;
  for (const Case& c : cases) {
    Tensor q = uniform({batch, heads, c.l, c.e}), k = uniform({batch, heads, c.s, c.e});
    Tensor v = uniform({batch, heads, c.s, c.ev});
    Tensor mask = c.mask == 0 ? Tensor()
                  : c.mask == 1 ? attention_mask({c.l, c.s})
                                : attention_mask({batch, 1, c.l, c.s});
    Tensor gmask = mask.defined() ? gpu(mask) : Tensor();
    const std::string tag = "attention L " + std::to_string(c.l) + " S " + std::to_string(c.s) + " E " +
                            std::to_string(c.e) + " Ev " + std::to_string(c.ev) + (c.causal ? " causal" : "") +
                            (c.mask == 1 ? " mask[L,S]" : c.mask == 2 ? " mask[B,1,L,S]" : "") +
                            (c.dropout_p > 0 ? " dropout " + std::to_string(c.dropout_p).substr(0, 3) : "");
    Tensor gq = gpu(q), gk = gpu(k), gv = gpu(v);
    auto cpu = ops::attention_forward(q, k, v, mask, c.causal, 0, c.dropout_p, seed);
    auto cuda = ops::attention_forward(gq, gk, gv, gmask, c.causal, 0, c.dropout_p, seed);
    compare(tag + " out", cpu[0], cuda[0]);
    compare(tag + " lse", cpu[1], cuda[1]);
    Tensor gout = uniform(cpu[0].shape());
    auto gcpu = ops::attention_backward(gout, q, k, v, mask, cpu[0], cpu[1], c.causal, 0, c.dropout_p, seed);
    // The GPU backward gets the CPU forward's out and lse: the backward kernels are compared alone.
    auto gcuda = ops::attention_backward(gpu(gout), gq, gk, gv, gmask, gpu(cpu[0]), gpu(cpu[1]), c.causal, 0,
                                         c.dropout_p, seed);
    compare(tag + " dq", gcpu[0], gcuda[0]);
    compare(tag + " dk", gcpu[1], gcuda[1]);
    compare(tag + " dv", gcpu[2], gcuda[2]);
  }
}

void test_transformer_layers_cuda() {
  test_layer_norm_cuda();
  test_gelu_cuda();
  test_embedding_cuda();
  test_cross_entropy_lse_cuda();
  test_attention_cuda();
}

}  // namespace

int main() {
  try {
    std::printf("%d CUDA device(s)\n", cuda::device_count());
  } catch (const Error& e) {
    std::printf("SKIPPED: %s\n", e.what());
    return 77;
  }
  try {
    test_fill_copy();
    test_elementwise();
    test_reductions();
    test_linear();
    test_conv();
    test_batch_norm();
    test_sync_batch_norm();
    test_max_pool();
    test_avg_pool();
    test_adaptive_avg_pool();
    test_losses();
    test_bad_target();
    test_sgd();
    test_adam();
    test_broadcast();
    test_unary();
    test_reduce();
    test_matmul();
    test_shape();
    test_transformer_layers_cuda();
    cuda::synchronize(0);
  } catch (const Error& e) {
    std::printf("FAIL unexpected error: %s\n", e.what());
    return 1;
  }
  std::printf("%s\n", test_failures() == 0 ? "all CUDA kernels agree with the CPU" : "FAILURES (see above)");
  return test_failures();
}
