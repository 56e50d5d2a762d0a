// CPU kernels of the shape family (permute, cat, narrow, index_select, gather, tril/triu): copies
// that move elements. They work on any dtype by its element size; each output element is written
// by one thread, and the backward scatter-adds run each destination's additions in index order,
// so results do not depend on the thread count.
#include <algorithm>
#include <cstring>

#include "ddp4j/broadcast.h"
#include "ddp4j/dispatch.h"
#include "ddp4j/kernels.h"
#include "ddp4j/parallel.h"

namespace ddp4j::cpu {
namespace {

/** Calls fn with a null pointer of the unsigned type as wide as one element of dtype. */
template <typename Fn>
void by_element_size(DType dtype, Fn&& fn) {
  switch (dtype_size(dtype)) {
    case 1: fn(static_cast<uint8_t*>(nullptr)); return;
    case 2: fn(static_cast<uint16_t*>(nullptr)); return;
    case 4: fn(static_cast<uint32_t*>(nullptr)); return;
    default: fn(static_cast<uint64_t*>(nullptr)); return;
  }
}

/** Rows of `row` elements per parallel_for unit so that a unit moves about a grain of elements. */
int64_t row_grain(int64_t row) { return std::max<int64_t>(1, kGrainSize / std::max<int64_t>(row, 1)); }

void permute(const Tensor& x, const std::vector<int>& dims, Tensor& out) {
  const Shape& xs = x.shape();
  const Shape& os = out.shape();
  const int n = x.dim();
  if (out.numel() == 0) return;
  if (n == 0) {
    std::memcpy(out.raw_data(), x.raw_data(), x.nbytes());
    return;
  }
  std::vector<int64_t> xstride(n), stride(n);  // stride[i]: x's stride of out's dimension i
  int64_t s = 1;
  for (int d = n - 1; d >= 0; --d) {
    xstride[d] = s;
    s *= xs[d];
  }
  for (int i = 0; i < n; ++i) stride[i] = xstride[dims[i]];
  const int64_t last = os[n - 1], rows = out.numel() / last, step = stride[n - 1];
  by_element_size(x.dtype(), [&](auto* type) {
    using T = std::remove_pointer_t<decltype(type)>;
    const T* px = x.data<T>();
    T* po = out.data<T>();
    parallel_for(0, rows, row_grain(last), [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        int64_t offset = 0, rest = r;
        for (int i = n - 2; i >= 0; --i) {
          offset += (rest % os[i]) * stride[i];
          rest /= os[i];
        }
        T* dst = po + r * last;
        for (int64_t j = 0; j < last; ++j) dst[j] = px[offset + j * step];
      }
    });
  });
}

void cat(const std::vector<Tensor>& xs, int dim, Tensor& out) {
  const Shape& os = out.shape();
  const int64_t outer = shape_product(os, 0, dim), inner = shape_product(os, dim + 1, out.dim());
  const size_t elem = dtype_size(out.dtype());
  const int64_t out_row = os[dim] * inner * static_cast<int64_t>(elem);  // bytes per outer index
  char* po = static_cast<char*>(out.raw_data());
  parallel_for(0, outer, row_grain(os[dim] * inner), [&](int64_t o0, int64_t o1) {
    for (int64_t o = o0; o < o1; ++o) {
      char* dst = po + o * out_row;
      for (const Tensor& x : xs) {
        const int64_t bytes = x.shape()[dim] * inner * static_cast<int64_t>(elem);
        if (bytes == 0) continue;
        std::memcpy(dst, static_cast<const char*>(x.raw_data()) + o * bytes, static_cast<size_t>(bytes));
        dst += bytes;
      }
    }
  });
}

void narrow(const Tensor& x, int dim, int64_t start, Tensor& out) {
  const Shape& xs = x.shape();
  const int64_t outer = shape_product(xs, 0, dim), inner = shape_product(xs, dim + 1, x.dim());
  const int64_t elem = static_cast<int64_t>(dtype_size(x.dtype()));
  const int64_t in_row = xs[dim] * inner * elem, out_row = out.shape()[dim] * inner * elem;
  if (out_row == 0) return;
  const char* px = static_cast<const char*>(x.raw_data()) + start * inner * elem;
  char* po = static_cast<char*>(out.raw_data());
  parallel_for(0, outer, row_grain(out_row / elem), [&](int64_t o0, int64_t o1) {
    for (int64_t o = o0; o < o1; ++o) std::memcpy(po + o * out_row, px + o * in_row, static_cast<size_t>(out_row));
  });
}

void narrow_backward(const Tensor& gy, int dim, int64_t start, Tensor& gx) {
  const Shape& xs = gx.shape();
  const int64_t outer = shape_product(xs, 0, dim), inner = shape_product(xs, dim + 1, gx.dim());
  const int64_t elem = static_cast<int64_t>(dtype_size(gx.dtype()));
  const int64_t out_row = xs[dim] * inner * elem, in_row = gy.shape()[dim] * inner * elem;
  const int64_t before = start * inner * elem;
  const char* pg = static_cast<const char*>(gy.raw_data());
  char* px = static_cast<char*>(gx.raw_data());
  if (out_row == 0) return;
  parallel_for(0, outer, row_grain(out_row / elem), [&](int64_t o0, int64_t o1) {
    for (int64_t o = o0; o < o1; ++o) {
      char* row = px + o * out_row;
      std::memset(row, 0, static_cast<size_t>(before));
      if (in_row > 0) std::memcpy(row + before, pg + o * in_row, static_cast<size_t>(in_row));
      std::memset(row + before + in_row, 0, static_cast<size_t>(out_row - before - in_row));
    }
  });
}

void index_select(const Tensor& x, int dim, const Tensor& index, Tensor& out) {
  const Shape& xs = x.shape();
  const int64_t outer = shape_product(xs, 0, dim), inner = shape_product(xs, dim + 1, x.dim());
  const int64_t size = xs[dim], count = index.numel();
  const int64_t elem = static_cast<int64_t>(dtype_size(x.dtype()));
  const int64_t* idx = index.data<int64_t>();
  const char* px = static_cast<const char*>(x.raw_data());
  char* po = static_cast<char*>(out.raw_data());
  if (inner == 0) return;
  parallel_for(0, outer * count, row_grain(inner), [&](int64_t u0, int64_t u1) {
    for (int64_t u = u0; u < u1; ++u) {
      const int64_t o = u / count, j = u % count;
      std::memcpy(po + u * inner * elem, px + (o * size + idx[j]) * inner * elem, static_cast<size_t>(inner * elem));
    }
  });
}

/** Columns of `inner` handled by one unit of the scatter-adds: each unit owns its destinations. */
constexpr int64_t kColumnBlock = 256;

void index_select_backward(const Tensor& gy, int dim, const Tensor& index, Tensor& gx) {
  const Shape& xs = gx.shape();
  const int64_t outer = shape_product(xs, 0, dim), inner = shape_product(xs, dim + 1, gx.dim());
  const int64_t size = xs[dim], count = index.numel();
  const int64_t blocks = (inner + kColumnBlock - 1) / kColumnBlock;
  const int64_t* idx = index.data<int64_t>();
  const float* pg = gy.data<float>();
  float* px = gx.data<float>();
  std::memset(gx.raw_data(), 0, gx.nbytes());
  parallel_for(0, outer * blocks, 1, [&](int64_t u0, int64_t u1) {
    for (int64_t u = u0; u < u1; ++u) {
      const int64_t o = u / blocks, c0 = (u % blocks) * kColumnBlock, c1 = std::min(inner, c0 + kColumnBlock);
      for (int64_t j = 0; j < count; ++j) {  // in index order: repeated indices add in a fixed order
        const float* src = pg + (o * count + j) * inner;
        float* dst = px + (o * size + idx[j]) * inner;
        for (int64_t c = c0; c < c1; ++c) dst[c] += src[c];
      }
    }
  });
}

/**
 * Walks index (read as [outer, size, inner] around dim) and calls fn(position in index, offset in
 * x of that position's dim-0 element, x's stride along dim) for each (outer, inner) pair, the
 * pairs split over the threads and each pair's positions visited in dim order.
 */
template <typename Fn>
void for_each_gather_line(const Shape& xs, int dim, const Shape& is, Fn&& fn) {
  const int n = static_cast<int>(is.size());
  std::vector<int64_t> xstride(n);
  int64_t s = 1;
  for (int d = n - 1; d >= 0; --d) {
    xstride[d] = s;
    s *= xs[d];
  }
  const int64_t outer = shape_product(is, 0, dim), size = is[dim], inner = shape_product(is, dim + 1, n);
  parallel_for(0, outer * inner, row_grain(size), [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      const int64_t o = p / inner, i = p % inner;
      int64_t base = 0, rest = i;
      for (int d = n - 1; d > dim; --d) {
        base += (rest % is[d]) * xstride[d];
        rest /= is[d];
      }
      rest = o;
      for (int d = dim - 1; d >= 0; --d) {
        base += (rest % is[d]) * xstride[d];
        rest /= is[d];
      }
      for (int64_t j = 0; j < size; ++j) fn((o * size + j) * inner + i, base, xstride[dim]);
    }
  });
}

void gather(const Tensor& x, int dim, const Tensor& index, Tensor& out) {
  if (out.numel() == 0) return;
  const int64_t* idx = index.data<int64_t>();
  by_element_size(x.dtype(), [&](auto* type) {
    using T = std::remove_pointer_t<decltype(type)>;
    const T* px = x.data<T>();
    T* po = out.data<T>();
    for_each_gather_line(x.shape(), dim, index.shape(), [&](int64_t at, int64_t base, int64_t stride) {
      po[at] = px[base + idx[at] * stride];
    });
  });
}

void gather_backward(const Tensor& gy, int dim, const Tensor& index, Tensor& gx) {
  std::memset(gx.raw_data(), 0, gx.nbytes());
  if (gy.numel() == 0) return;
  const int64_t* idx = index.data<int64_t>();
  const float* pg = gy.data<float>();
  float* px = gx.data<float>();
  // Positions of different (outer, inner) pairs reach different elements of gx: no two threads
  // add to one element, and each pair adds in dim order.
  for_each_gather_line(gx.shape(), dim, index.shape(), [&](int64_t at, int64_t base, int64_t stride) {
    px[base + idx[at] * stride] += pg[at];
  });
}

void triangle(const Tensor& x, int64_t diagonal, bool upper, Tensor& out) {
  const int n = x.dim();
  const int64_t rows = x.shape()[n - 2], cols = x.shape()[n - 1];
  const int64_t matrices = shape_product(x.shape(), 0, n - 2);
  by_element_size(x.dtype(), [&](auto* type) {
    using T = std::remove_pointer_t<decltype(type)>;
    const T* px = x.data<T>();
    T* po = out.data<T>();
    parallel_for(0, matrices * rows, row_grain(cols), [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const int64_t row = r % rows;
        const T* src = px + r * cols;
        T* dst = po + r * cols;
        for (int64_t c = 0; c < cols; ++c) {
          const bool keep = upper ? c - row >= diagonal : c - row <= diagonal;
          dst[c] = keep ? src[c] : T(0);  // T(0) is +0.0f, 0, false
        }
      }
    });
  });
}

}  // namespace

DDP4J_REGISTER_KERNEL(permute, CPU, permute);
DDP4J_REGISTER_KERNEL(cat, CPU, cat);
DDP4J_REGISTER_KERNEL(narrow, CPU, narrow);
DDP4J_REGISTER_KERNEL(narrow_backward, CPU, narrow_backward);
DDP4J_REGISTER_KERNEL(index_select, CPU, index_select);
DDP4J_REGISTER_KERNEL(index_select_backward, CPU, index_select_backward);
DDP4J_REGISTER_KERNEL(gather, CPU, gather);
DDP4J_REGISTER_KERNEL(gather_backward, CPU, gather_backward);
DDP4J_REGISTER_KERNEL(triangle, CPU, triangle);

}  // namespace ddp4j::cpu
