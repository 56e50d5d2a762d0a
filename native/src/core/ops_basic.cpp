// Elementwise ops and reductions: checks, output allocation, dispatch.
#include "ddp4j/dispatch.h"
#include "ddp4j/ops.h"

namespace ddp4j::ops {

void fill_(Tensor& t, double value) {
  static KernelSlot slot("fill");
  slot.get<kernels::fill_fn>(t.device())(t, value);
}

void copy_(const Tensor& src, Tensor& dst) {
  DDP4J_CHECK_ARG(src.dtype() == dst.dtype() && src.numel() == dst.numel(), "copy: cannot copy ", src.describe(),
                  " into ", dst.describe());
  if (src.device() != dst.device()) {
    static KernelSlot across("copy_across");
    across.get<kernels::copy_across_fn>(src.device().type != DeviceType::CPU ? src.device() : dst.device())(src, dst);
    return;
  }
  static KernelSlot slot("copy");
  slot.get<kernels::copy_fn>(src.device())(src, dst);
}

Tensor to_device(const Tensor& src, Device target) {
  if (src.device() == target) return src;
  Tensor dst = Tensor::empty(src.shape(), src.dtype(), target);
  copy_(src, dst);
  return dst;
}

namespace {
/** Checks that tensors tile flat exactly: flat's dtype and device, element counts adding up to its. */
void check_tiles(const char* op, const char* what, const std::vector<Tensor>& tensors, const Tensor& flat) {
  DDP4J_CHECK_ARG(flat.defined(), op, ": the flat tensor is missing");
  int64_t total = 0;
  for (size_t i = 0; i < tensors.size(); i++) {
    const Tensor& t = tensors[i];
    DDP4J_CHECK_ARG(t.dtype() == flat.dtype() && t.device() == flat.device(), op, ": ", what, " ", i, " is ",
                    t.describe(), " but the flat tensor is ", flat.describe(), " (dtype and device must match)");
    total += t.numel();
  }
  DDP4J_CHECK_ARG(total == flat.numel(), op, ": the ", tensors.size(), " ", what, "s hold ", total,
                  " elements but the flat tensor ", flat.describe(), " holds ", flat.numel());
}
}  // namespace

void flatten_into(const std::vector<Tensor>& sources, Tensor& flat) {
  check_tiles("flatten_into", "source", sources, flat);
  int64_t offset = 0;
  for (const Tensor& src : sources) {
    Tensor slice = flat.flat_slice(offset, src.shape());
    copy_(src, slice);
    offset += src.numel();
  }
}

void unflatten_from(const Tensor& flat, std::vector<Tensor>& destinations) {
  check_tiles("unflatten_from", "destination", destinations, flat);
  int64_t offset = 0;
  for (Tensor& dst : destinations) {
    copy_(flat.flat_slice(offset, dst.shape()), dst);
    offset += dst.numel();
  }
}

Tensor add(const Tensor& a, const Tensor& b, float alpha) {
  check_dtype("add", "a", a, DType::Float32);
  check_dtype("add", "b", b, DType::Float32);
  check_same_shape("add", a, b);
  check_same_device("add", a, b);
  Tensor out = Tensor::empty(a.shape(), a.dtype(), a.device());
  static KernelSlot slot("add");
  slot.get<kernels::add_fn>(a.device())(a, b, alpha, out);
  return out;
}

void add_(Tensor& a, const Tensor& b, float alpha) {
  check_dtype("add_", "a", a, DType::Float32);
  check_dtype("add_", "b", b, DType::Float32);
  DDP4J_CHECK_ARG(a.numel() == b.numel(), "add_: shapes must match, got ", shape_str(a.shape()), " and ",
                  shape_str(b.shape()));
  check_same_device("add_", a, b);
  static KernelSlot slot("add");
  slot.get<kernels::add_fn>(a.device())(a, b, alpha, a);
}

Tensor mul(const Tensor& a, const Tensor& b) {
  check_dtype("mul", "a", a, DType::Float32);
  check_dtype("mul", "b", b, DType::Float32);
  check_same_shape("mul", a, b);
  check_same_device("mul", a, b);
  Tensor out = Tensor::empty(a.shape(), a.dtype(), a.device());
  static KernelSlot slot("mul");
  slot.get<kernels::mul_fn>(a.device())(a, b, out);
  return out;
}

Tensor scale(const Tensor& a, float s) {
  check_dtype("scale", "a", a, DType::Float32);
  Tensor out = Tensor::empty(a.shape(), a.dtype(), a.device());
  static KernelSlot slot("scale");
  slot.get<kernels::scale_fn>(a.device())(a, s, out);
  return out;
}

void scale_(Tensor& a, float s) {
  check_dtype("scale_", "a", a, DType::Float32);
  static KernelSlot slot("scale");
  slot.get<kernels::scale_fn>(a.device())(a, s, a);
}

Tensor sum(const Tensor& a) {
  check_dtype("sum", "a", a, DType::Float32);
  Tensor out = Tensor::empty({}, DType::Float32, a.device());
  static KernelSlot slot("sum");
  slot.get<kernels::sum_fn>(a.device())(a, out);
  return out;
}

Tensor argmax_rows(const Tensor& x) {
  check_dtype("argmax", "input", x, DType::Float32);
  check_dim("argmax", "input", x, 2);
  DDP4J_CHECK_ARG(x.size(1) > 0, "argmax: rows are empty, shape ", shape_str(x.shape()));
  Tensor out = Tensor::empty({x.size(0)}, DType::Int64, x.device());
  static KernelSlot slot("argmax_rows");
  slot.get<kernels::argmax_rows_fn>(x.device())(x, out);
  return out;
}

}  // namespace ddp4j::ops
