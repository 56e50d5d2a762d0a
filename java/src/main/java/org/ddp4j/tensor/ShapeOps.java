package org.ddp4j.tensor;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import org.ddp4j.internal.NativeResults;
import org.ddp4j.internal.ShapeNatives;

/**
 * The differentiable shape ops behind Tensor's methods (permute, transpose, cat, split, stack,
 * index_select, gather, tril/triu), each with its backward node. The native tensor is contiguous,
 * so each returns a new contiguous tensor where PyTorch returns a strided view.
 */
final class ShapeOps {
    private ShapeOps() {}

    static Tensor result(long handle) {
        return Tensor.fromNativeResult(handle);
    }

    /** d in [0, ndim) for a d in [-ndim, ndim), else IllegalArgumentException naming op and shape. */
    static int wrap(String op, int d, int ndim, long[] shape) {
        int n = Math.max(ndim, 1);
        if (d < -n || d >= n) {
            throw new IllegalArgumentException(op + ": dimension " + d + " is out of range for a tensor of shape "
                    + Arrays.toString(shape) + " (expected a dimension in [" + -n + ", " + (n - 1) + "])");
        }
        return d < 0 ? d + n : d;
    }

    static Tensor permute(Tensor x, int[] dims) {
        long[] longs = new long[dims.length];
        for (int i = 0; i < dims.length; i++) {
            longs[i] = dims[i];
        }
        Tensor out = result(ShapeNatives.permute(x.nativeHandle(), longs, NativeResults.buffer()));
        long[] inverse = new long[dims.length];
        for (int i = 0; i < dims.length; i++) {
            inverse[wrap("permute", dims[i], dims.length, x.shape())] = i;
        }
        return new Node("PermuteBackward", x) {
            @Override
            protected Tensor[] backward(Tensor g) {
                return new Tensor[] {result(ShapeNatives.permute(g.nativeHandle(), inverse, NativeResults.buffer()))};
            }
        }.attach(out);
    }

    static Tensor transpose(Tensor x, int d0, int d1) {
        Tensor out = result(ShapeNatives.transpose(x.nativeHandle(), d0, d1, NativeResults.buffer()));
        return new Node("TransposeBackward", x) {
            @Override
            protected Tensor[] backward(Tensor g) {
                return new Tensor[] {result(ShapeNatives.transpose(g.nativeHandle(), d0, d1, NativeResults.buffer()))};
            }
        }.attach(out);
    }

    static Tensor cat(List<Tensor> tensors, int dim) {
        Objects.requireNonNull(tensors, "cat: tensors is null");
        long[] handles = new long[tensors.size()];
        for (int i = 0; i < handles.length; i++) {
            handles[i] = Objects.requireNonNull(tensors.get(i), "cat: tensor " + i + " is null").nativeHandle();
        }
        Tensor out = result(ShapeNatives.cat(handles, dim, NativeResults.buffer()));
        int d = wrap("cat", dim, out.dim(), out.shape());
        long[] sizes = new long[handles.length];
        for (int i = 0; i < sizes.length; i++) {
            sizes[i] = tensors.get(i).size(d);
        }
        return new Node("CatBackward", tensors.toArray(new Tensor[0])) {
            @Override
            protected Tensor[] backward(Tensor g) {
                Tensor[] grads = new Tensor[sizes.length];
                long start = 0;
                for (int i = 0; i < sizes.length; i++) {
                    if (needsInputGrad(i)) {
                        grads[i] = result(ShapeNatives.narrow(g.nativeHandle(), d, start, sizes[i], NativeResults.buffer()));
                    }
                    start += sizes[i];
                }
                return grads;
            }
        }.attach(out);
    }

    static Tensor narrow(Tensor x, int dim, long start, long length) {
        Tensor out = result(ShapeNatives.narrow(x.nativeHandle(), dim, start, length, NativeResults.buffer()));
        long[] shape = x.shape();
        return new Node("NarrowBackward", x) {
            @Override
            protected Tensor[] backward(Tensor g) {
                return new Tensor[] {
                    result(ShapeNatives.narrowBackward(g.nativeHandle(), shape, dim, start, NativeResults.buffer()))};
            }
        }.attach(out);
    }

    static List<Tensor> split(Tensor x, long[] sizes, int dim) {
        if (x.dim() == 0) {
            throw new IllegalArgumentException("split: cannot split the zero-dimensional " + x.describe());
        }
        int d = wrap("split", dim, x.dim(), x.shape());
        long total = 0;
        for (long s : sizes) {
            if (s < 0) {
                throw new IllegalArgumentException("split: sizes must be non-negative, got " + Arrays.toString(sizes));
            }
            total += s;
        }
        if (total != x.size(d)) {
            throw new IllegalArgumentException("split: sizes " + Arrays.toString(sizes) + " add up to " + total
                    + " but dimension " + dim + " of shape " + Arrays.toString(x.shape()) + " has size " + x.size(d));
        }
        List<Tensor> pieces = new ArrayList<>(sizes.length);
        long start = 0;
        for (long s : sizes) {
            pieces.add(narrow(x, d, start, s));
            start += s;
        }
        return pieces;
    }

    static List<Tensor> splitEvery(Tensor x, long splitSize, int dim) {
        if (x.dim() == 0) {
            throw new IllegalArgumentException("split: cannot split the zero-dimensional " + x.describe());
        }
        if (splitSize <= 0) {
            throw new IllegalArgumentException("split: splitSize must be positive, got " + splitSize + " for shape "
                    + Arrays.toString(x.shape()));
        }
        long size = x.size(dim);
        int n = (int) Math.max(1, (size + splitSize - 1) / splitSize);
        long[] sizes = new long[n];
        for (int i = 0; i < n; i++) {
            sizes[i] = Math.min(splitSize, size - i * splitSize);
        }
        return split(x, sizes, dim);
    }

    static List<Tensor> chunk(Tensor x, int chunks, int dim) {
        if (chunks <= 0) {
            throw new IllegalArgumentException("chunk: chunks must be positive, got " + chunks + " for shape "
                    + Arrays.toString(x.shape()));
        }
        long size = x.size(dim);
        long each = (size + chunks - 1) / chunks; // as torch.chunk: ceil, so there may be fewer chunks
        return splitEvery(x, Math.max(each, 1), dim);
    }

    static Tensor stack(List<Tensor> tensors, int dim) {
        Objects.requireNonNull(tensors, "stack: tensors is null");
        if (tensors.isEmpty()) {
            throw new IllegalArgumentException("stack: expected a non-empty list of tensors");
        }
        long[] shape = tensors.get(0).shape();
        int d = wrap("stack", dim, shape.length + 1, shape);
        List<Tensor> unsqueezed = new ArrayList<>(tensors.size());
        for (int i = 0; i < tensors.size(); i++) {
            Tensor t = Objects.requireNonNull(tensors.get(i), "stack: tensor " + i + " is null");
            if (!Arrays.equals(t.shape(), shape)) {
                throw new IllegalArgumentException("stack: tensor " + i + " has shape " + Arrays.toString(t.shape())
                        + " but tensor 0 has " + Arrays.toString(shape) + "; stack needs equal shapes");
            }
            long[] s = new long[shape.length + 1];
            for (int k = 0, j = 0; k < s.length; k++) {
                s[k] = k == d ? 1 : shape[j++];
            }
            unsqueezed.add(t.reshape(s));
        }
        return cat(unsqueezed, d);
    }

    static Tensor indexSelect(Tensor x, int dim, Tensor index) {
        Tensor out = result(ShapeNatives.indexSelect(x.nativeHandle(), dim, index.nativeHandle(), NativeResults.buffer()));
        long[] shape = x.shape();
        return new Node("IndexSelectBackward", x) {
            @Override
            protected Tensor[] backward(Tensor g) {
                return new Tensor[] {result(ShapeNatives.indexSelectBackward(g.nativeHandle(), shape, dim,
                        index.nativeHandle(), NativeResults.buffer()))};
            }
        }.attach(out);
    }

    static Tensor gather(Tensor x, int dim, Tensor index) {
        Tensor out = result(ShapeNatives.gather(x.nativeHandle(), dim, index.nativeHandle(), NativeResults.buffer()));
        long[] shape = x.shape();
        return new Node("GatherBackward", x) {
            @Override
            protected Tensor[] backward(Tensor g) {
                return new Tensor[] {result(ShapeNatives.gatherBackward(g.nativeHandle(), shape, dim,
                        index.nativeHandle(), NativeResults.buffer()))};
            }
        }.attach(out);
    }

    static Tensor triangle(Tensor x, long diagonal, boolean upper) {
        Tensor out = result(ShapeNatives.triangle(x.nativeHandle(), diagonal, upper, NativeResults.buffer()));
        return new Node(upper ? "TriuBackward" : "TrilBackward", x) {
            @Override
            protected Tensor[] backward(Tensor g) {
                return new Tensor[] {result(ShapeNatives.triangle(g.nativeHandle(), diagonal, upper, NativeResults.buffer()))};
            }
        }.attach(out);
    }
}
