// CPU kernels of the unary family: element-wise functions of one tensor, split into grains over
// the intra-op threads (each element computed on its own: the same bits for any thread count).
#include <cmath>

#include "ddp4j/dispatch.h"
#include "ddp4j/kernels.h"
#include "ddp4j/parallel.h"

namespace ddp4j::cpu {
namespace {

using kernels::UnaryOp;

template <typename In, typename Out, typename F>
void map(const Tensor& x, Tensor& out, F f) {
  const In* px = x.data<In>();
  Out* po = out.data<Out>();
  parallel_for(0, x.numel(), kGrainSize, [=](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) po[i] = f(px[i]);
  });
}

void unary(const Tensor& x, UnaryOp op, double scalar, Tensor& out) {
  const float s = static_cast<float>(scalar);
  switch (op) {
    case UnaryOp::Exp: map<float, float>(x, out, [](float v) { return std::exp(v); }); return;
    case UnaryOp::Log: map<float, float>(x, out, [](float v) { return std::log(v); }); return;
    case UnaryOp::Tanh: map<float, float>(x, out, [](float v) { return std::tanh(v); }); return;
    case UnaryOp::Sqrt: map<float, float>(x, out, [](float v) { return std::sqrt(v); }); return;
    case UnaryOp::Neg: map<float, float>(x, out, [](float v) { return -v; }); return;
    case UnaryOp::AddScalar: map<float, float>(x, out, [s](float v) { return v + s; }); return;
    case UnaryOp::MulScalar: map<float, float>(x, out, [s](float v) { return v * s; }); return;
    case UnaryOp::DivScalar: map<float, float>(x, out, [s](float v) { return v / s; }); return;
    case UnaryOp::LogicalNot: map<uint8_t, uint8_t>(x, out, [](uint8_t v) { return static_cast<uint8_t>(v == 0); }); return;
    case UnaryOp::Pow:
      // The exponents PyTorch computes by multiplication or sqrt (pow_tensor_scalar's special cases).
      if (scalar == 2) {
        map<float, float>(x, out, [](float v) { return v * v; });
      } else if (scalar == 3) {
        map<float, float>(x, out, [](float v) { return v * v * v; });
      } else if (scalar == 0.5) {
        map<float, float>(x, out, [](float v) { return std::sqrt(v); });
      } else if (scalar == -1) {
        map<float, float>(x, out, [](float v) { return 1.0f / v; });
      } else {
        map<float, float>(x, out, [s](float v) { return std::pow(v, s); });
      }
      return;
  }
  throw Error(ErrorKind::InvalidArgument, "unary: unknown op code");
}

}  // namespace

DDP4J_REGISTER_KERNEL(unary, CPU, unary);

}  // namespace ddp4j::cpu
