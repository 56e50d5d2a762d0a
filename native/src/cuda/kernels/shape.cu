// CUDA kernels of the shape family (permute, cat, narrow, index_select, gather, tril/triu): copies
// that move elements, any dtype by its element size, one thread per output element. The backward
// scatter-adds give each thread a set of destinations no other thread touches and add in index
// order, as src/cpu/shape.cpp: the same bits as the CPU, no atomics.
#include <algorithm>

#include "cuda/cuda_context.h"
#include "cuda/kernels/indexing.cuh"
#include "ddp4j/broadcast.h"
#include "ddp4j/dispatch.h"
#include "ddp4j/kernels.h"

namespace ddp4j::cuda {
namespace {

constexpr int kThreads = 256;

/** out[i] = x[offset of i]: the general strided gather of permute (x's strides walked in out's order). */
template <typename T>
__global__ void strided_copy_kernel(const T* x, T* out, int64_t n, StridedWalk<1> walk) {
  DDP4J_GRID_LOOP(i, n) {
    int64_t off[1];
    walk.offsets(i, off);
    out[i] = x[off[0]];
  }
}

/** dst[r * dst_pitch + c] = src[r * src_pitch + c] for r < rows, c < width (elements). */
template <typename T>
__global__ void copy_rows_kernel(const T* src, int64_t src_pitch, T* dst, int64_t dst_pitch, int64_t rows,
                                 int64_t width) {
  DDP4J_GRID_LOOP(i, rows * width) {
    const int64_t r = i / width, c = i % width;
    dst[r * dst_pitch + c] = src[r * src_pitch + c];
  }
}

/** Copies a [rows, width] block between row pitches (elements of dtype) on stream. */
void copy_rows(DType dtype, const void* src, int64_t src_pitch, void* dst, int64_t dst_pitch, int64_t rows,
               int64_t width, cudaStream_t stream, const char* name) {
  if (rows == 0 || width == 0) return;
  by_element_size(dtype, [&](auto* type) {
    using T = std::remove_pointer_t<decltype(type)>;
    copy_rows_kernel<T><<<grid_for(rows * width, kThreads), kThreads, 0, stream>>>(
        static_cast<const T*>(src), src_pitch, static_cast<T*>(dst), dst_pitch, rows, width);
  });
  DDP4J_CUDA_CHECK_LAUNCH(name);
}

void permute(const Tensor& x, const std::vector<int>& dims, Tensor& out) {
  const int64_t n = out.numel();
  if (n == 0) return;
  const std::vector<int64_t> xstride = contiguous_strides(x.shape());
  std::vector<int64_t> stride(dims.size());
  for (size_t i = 0; i < dims.size(); ++i) stride[i] = xstride[dims[i]];
  const StridedWalk<1> walk = make_walk<1>("permute", out.shape(), {stride});
  LaunchContext ctx(out);
  by_element_size(x.dtype(), [&](auto* type) {
    using T = std::remove_pointer_t<decltype(type)>;
    strided_copy_kernel<T><<<grid_for(n, kThreads), kThreads, 0, ctx.stream>>>(
        static_cast<const T*>(x.raw_data()), static_cast<T*>(out.raw_data()), n, walk);
  });
  DDP4J_CUDA_CHECK_LAUNCH("permute");
}

void cat(const std::vector<Tensor>& xs, int dim, Tensor& out) {
  if (out.numel() == 0) return;
  const Shape& os = out.shape();
  const int64_t outer = shape_product(os, 0, dim), inner = shape_product(os, dim + 1, out.dim());
  const int64_t out_row = os[dim] * inner;  // elements per outer index
  const size_t elem = dtype_size(out.dtype());
  LaunchContext ctx(out);
  int64_t column = 0;
  for (const Tensor& x : xs) {
    const int64_t row = x.shape()[dim] * inner;
    if (row > 0) {
      copy_rows(out.dtype(), x.raw_data(), row, static_cast<char*>(out.raw_data()) + column * elem, out_row, outer,
                row, ctx.stream, "cat");
    }
    column += row;
  }
}

void narrow(const Tensor& x, int dim, int64_t start, Tensor& out) {
  if (out.numel() == 0) return;
  const Shape& xs = x.shape();
  const int64_t outer = shape_product(xs, 0, dim), inner = shape_product(xs, dim + 1, x.dim());
  const int64_t in_row = xs[dim] * inner, out_row = out.shape()[dim] * inner;
  const size_t elem = dtype_size(x.dtype());
  LaunchContext ctx(out);
  copy_rows(x.dtype(), static_cast<const char*>(x.raw_data()) + start * inner * elem, in_row, out.raw_data(), out_row,
            outer, out_row, ctx.stream, "narrow");
}

void narrow_backward(const Tensor& gy, int dim, int64_t start, Tensor& gx) {
  if (gx.numel() == 0) return;
  const Shape& xs = gx.shape();
  const int64_t outer = shape_product(xs, 0, dim), inner = shape_product(xs, dim + 1, gx.dim());
  const int64_t out_row = xs[dim] * inner, in_row = gy.shape()[dim] * inner;
  const size_t elem = dtype_size(gx.dtype());
  LaunchContext ctx(gx);
  DDP4J_CUDA_CHECK(cudaMemsetAsync(gx.raw_data(), 0, gx.nbytes(), ctx.stream));
  copy_rows(gx.dtype(), gy.numel() > 0 ? gy.raw_data() : nullptr, in_row,
            static_cast<char*>(gx.raw_data()) + start * inner * elem, out_row, outer, in_row, ctx.stream,
            "narrow_backward");
}

template <typename T>
__global__ void index_select_kernel(const T* x, const int64_t* index, int64_t size, int64_t count, int64_t inner,
                                    T* out, int64_t n) {
  DDP4J_GRID_LOOP(u, n) {
    const int64_t i = u % inner, j = (u / inner) % count, o = u / (inner * count);
    out[u] = x[(o * size + index[j]) * inner + i];
  }
}

void index_select(const Tensor& x, int dim, const Tensor& index, Tensor& out) {
  const int64_t n = out.numel();
  if (n == 0) return;
  const Shape& xs = x.shape();
  const int64_t inner = shape_product(xs, dim + 1, x.dim());
  LaunchContext ctx(out);
  by_element_size(x.dtype(), [&](auto* type) {
    using T = std::remove_pointer_t<decltype(type)>;
    index_select_kernel<T><<<grid_for(n, kThreads), kThreads, 0, ctx.stream>>>(
        static_cast<const T*>(x.raw_data()), index.data<int64_t>(), xs[dim], index.numel(), inner,
        static_cast<T*>(out.raw_data()), n);
  });
  DDP4J_CUDA_CHECK_LAUNCH("index_select");
}

/** One thread per (outer, column) of gx: adds gy's slices at index[j] in j order (its own destinations only). */
__global__ void index_select_backward_kernel(const float* gy, const int64_t* index, int64_t size, int64_t count,
                                             int64_t outer, int64_t inner, float* gx) {
  DDP4J_GRID_LOOP(p, outer * inner) {
    const int64_t o = p / inner, c = p % inner;
    for (int64_t j = 0; j < count; ++j) gx[(o * size + index[j]) * inner + c] += gy[(o * count + j) * inner + c];
  }
}

void index_select_backward(const Tensor& gy, int dim, const Tensor& index, Tensor& gx) {
  if (gx.numel() == 0) return;
  const Shape& xs = gx.shape();
  const int64_t outer = shape_product(xs, 0, dim), inner = shape_product(xs, dim + 1, gx.dim());
  LaunchContext ctx(gx);
  DDP4J_CUDA_CHECK(cudaMemsetAsync(gx.raw_data(), 0, gx.nbytes(), ctx.stream));
  if (index.numel() == 0) return;
  index_select_backward_kernel<<<grid_for(outer * inner, kThreads), kThreads, 0, ctx.stream>>>(
      gy.data<float>(), index.data<int64_t>(), xs[dim], index.numel(), outer, inner, gx.data<float>());
  DDP4J_CUDA_CHECK_LAUNCH("index_select_backward");
}

/**
 * The walk of index's elements (index's shape) with x's strides: offsets(p) is x's element at
 * index position p with the dim coordinate 0; xs_dim is x's stride along dim.
 */
StridedWalk<1> gather_walk(const char* op, const Shape& xs, int dim, const Shape& is, int64_t* xs_dim) {
  std::vector<int64_t> stride = contiguous_strides(xs);
  *xs_dim = stride[dim];
  stride[dim] = 0;
  // No merging across dim (its coordinate is replaced): keep index's shape as is, minus size-1 dims.
  Shape sizes;
  std::vector<int64_t> st;
  for (size_t d = 0; d < is.size(); ++d) {
    if (is[d] == 1) continue;
    sizes.push_back(is[d]);
    st.push_back(stride[d]);
  }
  DDP4J_CHECK_ARG(sizes.size() <= static_cast<size_t>(kMaxDims), op, ": ", sizes.size(),
                  " dimensions; the CUDA kernel takes at most ", kMaxDims);
  StridedWalk<1> w;
  w.ndim = static_cast<int>(sizes.size());
  for (int d = 0; d < w.ndim; ++d) {
    w.size[d] = sizes[d];
    w.stride[0][d] = st[d];
  }
  return w;
}

template <typename T>
__global__ void gather_kernel(const T* x, const int64_t* index, int64_t dim_stride, T* out, int64_t n,
                              StridedWalk<1> walk) {
  DDP4J_GRID_LOOP(p, n) {
    int64_t off[1];
    walk.offsets(p, off);
    out[p] = x[off[0] + index[p] * dim_stride];
  }
}

void gather(const Tensor& x, int dim, const Tensor& index, Tensor& out) {
  const int64_t n = out.numel();
  if (n == 0) return;
  int64_t dim_stride = 0;
  const StridedWalk<1> walk = gather_walk("gather", x.shape(), dim, index.shape(), &dim_stride);
  LaunchContext ctx(out);
  by_element_size(x.dtype(), [&](auto* type) {
    using T = std::remove_pointer_t<decltype(type)>;
    gather_kernel<T><<<grid_for(n, kThreads), kThreads, 0, ctx.stream>>>(static_cast<const T*>(x.raw_data()),
                                                                         index.data<int64_t>(), dim_stride,
                                                                         static_cast<T*>(out.raw_data()), n, walk);
  });
  DDP4J_CUDA_CHECK_LAUNCH("gather");
}

/**
 * One thread per (outer, inner) line of index around dim: adds gy along the line into gx in dim
 * order. Lines differ in a coordinate other than dim, so no two threads share a destination.
 */
__global__ void gather_backward_kernel(const float* gy, const int64_t* index, int64_t outer, int64_t size,
                                       int64_t inner, int64_t dim_stride, float* gx, StridedWalk<1> walk) {
  DDP4J_GRID_LOOP(l, outer * inner) {
    const int64_t o = l / inner, i = l % inner;
    int64_t off[1];
    walk.offsets(o * size * inner + i, off);  // the line's first position (dim coordinate 0)
    for (int64_t j = 0; j < size; ++j) {
      const int64_t at = (o * size + j) * inner + i;
      gx[off[0] + index[at] * dim_stride] += gy[at];
    }
  }
}

void gather_backward(const Tensor& gy, int dim, const Tensor& index, Tensor& gx) {
  if (gx.numel() == 0) return;
  LaunchContext ctx(gx);
  DDP4J_CUDA_CHECK(cudaMemsetAsync(gx.raw_data(), 0, gx.nbytes(), ctx.stream));
  if (gy.numel() == 0) return;
  const Shape& is = index.shape();
  const int64_t outer = shape_product(is, 0, dim), size = is[dim], inner = shape_product(is, dim + 1, index.dim());
  int64_t dim_stride = 0;
  const StridedWalk<1> walk = gather_walk("gather_backward", gx.shape(), dim, is, &dim_stride);
  gather_backward_kernel<<<grid_for(outer * inner, kThreads), kThreads, 0, ctx.stream>>>(
      gy.data<float>(), index.data<int64_t>(), outer, size, inner, dim_stride, gx.data<float>(), walk);
  DDP4J_CUDA_CHECK_LAUNCH("gather_backward");
}

template <typename T>
__global__ void triangle_kernel(const T* x, int64_t rows, int64_t cols, int64_t diagonal, bool upper, T* out,
                                int64_t n) {
  DDP4J_GRID_LOOP(e, n) {
    const int64_t c = e % cols, row = (e / cols) % rows;
    const bool keep = upper ? c - row >= diagonal : c - row <= diagonal;
    out[e] = keep ? x[e] : T(0);  // T(0): the bits of +0.0f, 0, false
  }
}

void triangle(const Tensor& x, int64_t diagonal, bool upper, Tensor& out) {
  const int64_t n = out.numel();
  if (n == 0) return;
  const int d = x.dim();
  const int64_t rows = x.shape()[d - 2], cols = x.shape()[d - 1];
  LaunchContext ctx(out);
  by_element_size(x.dtype(), [&](auto* type) {
    using T = std::remove_pointer_t<decltype(type)>;
    triangle_kernel<T><<<grid_for(n, kThreads), kThreads, 0, ctx.stream>>>(
        static_cast<const T*>(x.raw_data()), rows, cols, diagonal, upper, static_cast<T*>(out.raw_data()), n);
  });
  DDP4J_CUDA_CHECK_LAUNCH("triangle");
}

}  // namespace

DDP4J_REGISTER_KERNEL(permute, CUDA, permute);
DDP4J_REGISTER_KERNEL(cat, CUDA, cat);
DDP4J_REGISTER_KERNEL(narrow, CUDA, narrow);
DDP4J_REGISTER_KERNEL(narrow_backward, CUDA, narrow_backward);
DDP4J_REGISTER_KERNEL(index_select, CUDA, index_select);
DDP4J_REGISTER_KERNEL(index_select_backward, CUDA, index_select_backward);
DDP4J_REGISTER_KERNEL(gather, CUDA, gather);
DDP4J_REGISTER_KERNEL(gather_backward, CUDA, gather_backward);
DDP4J_REGISTER_KERNEL(triangle, CUDA, triangle);

}  // namespace ddp4j::cuda
