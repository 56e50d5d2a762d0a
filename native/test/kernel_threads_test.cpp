// ctest: the CPU kernels that split work among the intra-op threads give the same bits at 1, 2
// and 3 threads (on inputs large enough to be split), and the blocked GEMM (cpu/gemm.h) agrees
// with a plain double-precision product for every transpose case and both ways of cutting C.
#include <cmath>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "cpu/gemm.h"
#include "ddp4j/ops.h"
#include "ddp4j/parallel.h"
#include "test_util.h"

using namespace ddp4j;

namespace {

Tensor random(const Shape& shape, uint64_t seed, float lo = -1, float hi = 1) {
  Tensor t = Tensor::empty(shape, DType::Float32);
  float* p = t.data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) {
    p[i] = lo + (hi - lo) * static_cast<float>(test::mix(seed * 1000003 + static_cast<uint64_t>(i)) % 1000001) / 1e6f;
  }
  return t;
}

Tensor labels(int64_t n, int64_t classes) {
  Tensor t = Tensor::empty({n}, DType::Int64);
  for (int64_t i = 0; i < n; ++i) t.data<int64_t>()[i] = static_cast<int64_t>(test::mix(static_cast<uint64_t>(i)) % classes);
  return t;
}

Tensor clone(const Tensor& t) {
  Tensor c = Tensor::empty(t.shape(), t.dtype());
  std::memcpy(c.raw_data(), t.raw_data(), t.nbytes());
  return c;
}

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.nbytes() == b.nbytes() && std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0;
}

/** Runs op at 1, 2 and 3 threads; every output tensor must carry the same bits as at 1 thread. */
void check_thread_counts(const std::string& name, const std::function<std::vector<Tensor>()>& op) {
  set_num_threads(1);
  const std::vector<Tensor> serial = op();
  for (int threads = 2; threads <= 3; ++threads) {
    set_num_threads(threads);
    const std::vector<Tensor> got = op();
    bool same = got.size() == serial.size();
    for (size_t i = 0; same && i < got.size(); ++i) same = same_bits(got[i], serial[i]);
    if (!same) std::fprintf(stderr, "%s: results at %d threads differ from 1 thread\n", name.c_str(), threads);
    CHECK(same);
  }
}

/** cpu::sgemm against a double-precision product, C = 0.5 op(A) op(B) + 2 C. */
void check_gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k) {
  const Tensor a = ta ? random({k, m}, 1) : random({m, k}, 1);
  const Tensor b = tb ? random({n, k}, 2) : random({k, n}, 2);
  const Tensor c0 = random({m, n}, 3);
  auto at = [&](int64_t i, int64_t l) { return ta ? a.data<float>()[l * m + i] : a.data<float>()[i * k + l]; };
  auto bt = [&](int64_t l, int64_t j) { return tb ? b.data<float>()[j * k + l] : b.data<float>()[l * n + j]; };
  for (int threads = 1; threads <= 3; ++threads) {
    set_num_threads(threads);
    Tensor c = clone(c0);
    cpu::sgemm(ta, tb, m, n, k, 0.5f, a.data<float>(), ta ? m : k, b.data<float>(), tb ? k : n, 2.0f, c.data<float>(), n);
    double worst = 0;
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double want = 2.0 * c0.data<float>()[i * n + j];
        for (int64_t l = 0; l < k; ++l) want += 0.5 * at(i, l) * bt(l, j);
        worst = std::fmax(worst, std::fabs(want - c.data<float>()[i * n + j]));
      }
    }
    if (worst > 1e-4 * static_cast<double>(k)) {
      std::fprintf(stderr, "sgemm ta=%d tb=%d %lldx%lldx%lld at %d threads: error %g\n", ta, tb,
                   static_cast<long long>(m), static_cast<long long>(n), static_cast<long long>(k), threads, worst);
    }
    CHECK(worst <= 1e-4 * static_cast<double>(k));
  }
}

}  // namespace

int main() {
  // The GEMM: rows of C cut (m >= n) and columns cut (m < n), each transpose case; and k == 0.
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      check_gemm(ta, tb, 300, 70, 40);
      check_gemm(ta, tb, 20, 900, 50);
      check_gemm(ta, tb, 5, 3, 7);  // one call
    }
  }
  {
    Tensor c = random({200, 300}, 4);
    cpu::sgemm(false, false, 200, 300, 0, 1.0f, nullptr, 1, nullptr, 300, 0.0f, c.data<float>(), 300);
    bool zeros = true;
    for (int64_t i = 0; i < c.numel(); ++i) zeros = zeros && c.data<float>()[i] == 0.0f;
    CHECK(zeros);
  }

  const int64_t n = 100003;  // three grains and a bit: split at 2 and 3 threads
  const Tensor a = random({n}, 10), b = random({n}, 11);
  check_thread_counts("add", [&] { return std::vector<Tensor>{ops::add(a, b, 0.5f)}; });
  check_thread_counts("mul", [&] { return std::vector<Tensor>{ops::mul(a, b)}; });
  check_thread_counts("scale", [&] { return std::vector<Tensor>{ops::scale(a, 3.0f)}; });
  check_thread_counts("sum", [&] { return std::vector<Tensor>{ops::sum(a)}; });
  check_thread_counts("fill", [&] {
    Tensor t = Tensor::empty({n}, DType::Float32);
    ops::fill_(t, 0.25);
    return std::vector<Tensor>{t};
  });
  check_thread_counts("copy", [&] {
    Tensor t = Tensor::empty({n}, DType::Float32);
    ops::copy_(a, t);
    CHECK(same_bits(t, a));
    return std::vector<Tensor>{t};
  });
  const Tensor scores = random({12000, 10}, 12);
  check_thread_counts("argmax_rows", [&] { return std::vector<Tensor>{ops::argmax_rows(scores)}; });
  check_thread_counts("relu", [&] {
    Tensor y = ops::relu_forward(a);
    return std::vector<Tensor>{y, ops::relu_backward(b, y)};
  });

  // Linear at three shapes: together they cut every GEMM both ways and split the bias gradient.
  for (const auto& s : std::vector<std::vector<int64_t>>{{300, 96, 200}, {32, 64, 2048}, {32, 2048, 64}}) {
    const int64_t rows = s[0], in = s[1], out = s[2];
    const Tensor x = random({rows, in}, 20), w = random({out, in}, 21), bias = random({out}, 22);
    const Tensor gy = random({rows, out}, 23);
    check_thread_counts("linear " + std::to_string(rows) + "x" + std::to_string(in) + "->" + std::to_string(out), [&] {
      std::vector<Tensor> r = ops::linear_backward(gy, x, w, true, true);
      r.push_back(ops::linear_forward(x, w, bias));
      return r;
    });
  }

  // BatchNorm2d: 48 channels of 2 x 32 x 32, split by channel (statistics) and by plane.
  {
    const Tensor x = random({2, 48, 32, 32}, 30, -3, 5), gamma = random({48}, 31), beta = random({48}, 32);
    const Tensor rm0 = random({48}, 33), rv0 = random({48}, 34, 0.5f, 2), gy = random({2, 48, 32, 32}, 35);
    check_thread_counts("batch_norm2d", [&] {
      Tensor rm = clone(rm0), rv = clone(rv0);
      std::vector<Tensor> r = ops::batch_norm2d_forward_train(x, gamma, beta, rm, rv, 0.1, 1e-5);
      std::vector<Tensor> g = ops::batch_norm2d_backward(gy, x, gamma, r[1], r[2]);
      r.insert(r.end(), g.begin(), g.end());
      r.push_back(rm);
      r.push_back(rv);
      r.push_back(ops::batch_norm2d_forward_eval(x, gamma, beta, rm0, rv0, 1e-5));
      return r;
    });
    // The fused batch norm + residual + ReLU (ResNet blocks), forward in both modes and backward.
    const Tensor residual = random({2, 48, 32, 32}, 36);
    check_thread_counts("batch_norm2d_relu", [&] {
      Tensor rm = clone(rm0), rv = clone(rv0);
      std::vector<Tensor> r = ops::batch_norm2d_relu_forward_train(x, gamma, beta, rm, rv, 0.1, 1e-5, residual);
      std::vector<Tensor> g = ops::batch_norm2d_relu_backward(gy, r[0], x, gamma, r[1], r[2], true);
      std::vector<Tensor> g2 = ops::batch_norm2d_relu_backward(gy, r[0], x, gamma, r[1], r[2], false);
      r.insert(r.end(), g.begin(), g.end());
      r.insert(r.end(), g2.begin(), g2.end());
      r.push_back(rm);
      r.push_back(rv);
      r.push_back(ops::batch_norm2d_relu_forward_eval(x, gamma, beta, rm0, rv0, 1e-5, residual));
      return r;
    });
    // SyncBatchNorm's local passes (one rank's row combined alone), split by channel and by plane.
    check_thread_counts("sync_batch_norm", [&] {
      Tensor rm = clone(rm0), rv = clone(rv0), none;
      Tensor stats = ops::sync_batch_norm_stats(x);
      int64_t count = 0;
      std::vector<Tensor> r = ops::sync_batch_norm_gather_stats(stats, 48, rm, rv, 0.1, 1e-5, &count);
      r.push_back(ops::sync_batch_norm_elemt(x, r[0], r[2], r[1], gamma, beta));
      r.push_back(ops::sync_batch_norm_elemt(x, r[0], r[2], r[1], gamma, beta, residual, true));
      std::vector<Tensor> g = ops::sync_batch_norm_backward_reduce(gy, x, r[0], r[2], r[1]);
      r.insert(r.end(), g.begin(), g.end());
      r.push_back(ops::sync_batch_norm_backward_elemt(gy, x, r[0], r[2], r[1], gamma, g[0], count));
      r.push_back(stats);
      r.push_back(rm);
      r.push_back(rv);
      return r;
    });
    // 96 x 96 planes: the passes go channel block by channel block (cache_block in batch_norm.cpp).
    const Tensor xl = random({2, 8, 96, 96}, 37, -3, 5), gl = random({8}, 38), bl = random({8}, 39);
    const Tensor rl = random({2, 8, 96, 96}, 40), gyl = random({2, 8, 96, 96}, 41);
    check_thread_counts("batch_norm2d 96x96", [&] {
      Tensor rm = clone(rm0), rv = clone(rv0);
      Tensor rm8 = Tensor::empty({8}, DType::Float32), rv8 = Tensor::empty({8}, DType::Float32);
      std::memcpy(rm8.raw_data(), rm.raw_data(), 8 * sizeof(float));
      std::memcpy(rv8.raw_data(), rv.raw_data(), 8 * sizeof(float));
      std::vector<Tensor> r = ops::batch_norm2d_forward_train(xl, gl, bl, rm8, rv8, 0.1, 1e-5);
      std::vector<Tensor> g = ops::batch_norm2d_backward(gyl, xl, gl, r[1], r[2]);
      std::vector<Tensor> f = ops::batch_norm2d_relu_forward_train(xl, gl, bl, rm8, rv8, 0.1, 1e-5, rl);
      std::vector<Tensor> fg = ops::batch_norm2d_relu_backward(gyl, f[0], xl, gl, f[1], f[2], false);
      for (auto* v : {&g, &f, &fg}) r.insert(r.end(), v->begin(), v->end());
      r.push_back(rm8);
      r.push_back(rv8);
      return r;
    });
  }

  // Losses: the means over several blocks; the cross entropy over 12000 rows of 10 classes.
  {
    const Tensor gout = random({}, 40, 0.5f, 2);
    check_thread_counts("mse_loss", [&] {
      return std::vector<Tensor>{ops::mse_loss_forward(a, b), ops::mse_loss_backward(gout, a, b)};
    });
    const Tensor target = labels(12000, 10);
    check_thread_counts("cross_entropy", [&] {
      std::vector<Tensor> r = ops::cross_entropy_forward(scores, target);
      r.push_back(ops::cross_entropy_backward(gout, r[1], target));
      return r;
    });
  }

  // Optimizer steps, three updates each (momentum, nesterov, weight decay; Adam, AdamW with amsgrad).
  {
    const Tensor p0 = random({n}, 50), g = random({n}, 51);
    check_thread_counts("sgd", [&] {
      Tensor p = clone(p0), buf = Tensor::empty({n}, DType::Float32);
      kernels::SgdOptions o;
      o.lr = 0.1;
      o.momentum = 0.9;
      o.nesterov = true;
      o.weight_decay = 0.01;
      for (int step = 0; step < 3; ++step) ops::sgd_step_(p, g, buf, o, step == 0);
      Tensor plain = clone(p0), none;
      kernels::SgdOptions o2;
      o2.lr = 0.1;
      ops::sgd_step_(plain, g, none, o2, true);
      return std::vector<Tensor>{p, buf, plain};
    });
    for (bool decoupled : {false, true}) {
      check_thread_counts(decoupled ? "adamw" : "adam", [&] {
        Tensor p = clone(p0), m = Tensor::empty({n}, DType::Float32), v = Tensor::empty({n}, DType::Float32);
        Tensor vmax = Tensor::empty({n}, DType::Float32);
        ops::fill_(m, 0);
        ops::fill_(v, 0);
        ops::fill_(vmax, 0);
        kernels::AdamOptions o;
        o.weight_decay = 0.01;
        o.amsgrad = decoupled;
        o.decoupled = decoupled;
        Tensor none;
        for (int64_t step = 1; step <= 3; ++step) ops::adam_step_(p, g, m, v, decoupled ? vmax : none, o, step);
        return std::vector<Tensor>{p, m, v, vmax};
      });
    }
    // A whole group in one call: the threads' ranges cross from one parameter into the next.
    check_thread_counts("adamw group", [&] {
      std::vector<Tensor> out;
      std::vector<kernels::AdamTensors> group;
      const std::vector<int64_t> sizes{n / 3, 5, n};
      for (size_t k = 0; k < sizes.size(); ++k) {
        for (uint64_t s = 0; s < 4; ++s) out.push_back(random({sizes[k]}, 60 + 4 * k + s, 0, 1));
      }
      for (size_t k = 0; k < sizes.size(); ++k) {
        group.push_back({&out[4 * k], &out[4 * k + 1], &out[4 * k + 2], &out[4 * k + 3], nullptr, 1});
      }
      kernels::AdamOptions o;
      o.weight_decay = 0.01;
      o.decoupled = true;
      for (int64_t step = 1; step <= 3; ++step) {
        for (auto& t : group) t.step = step;
        ops::adam_steps_(group, o);
      }
      return out;
    });
  }
  return test_failures();
}
