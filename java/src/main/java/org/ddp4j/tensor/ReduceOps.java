package org.ddp4j.tensor;

import org.ddp4j.internal.NativeResults;
import org.ddp4j.internal.ReduceNatives;
import org.ddp4j.internal.ShapeNatives;
import org.ddp4j.internal.UnaryNatives;

/** The differentiable reductions over dimensions and softmax behind Tensor's methods. */
final class ReduceOps {
    private ReduceOps() {}

    static Tensor sumRaw(Tensor x, int[] dims, boolean keepdim, boolean mean) {
        long[] longs = new long[dims.length];
        for (int i = 0; i < dims.length; i++) {
            longs[i] = dims[i];
        }
        return Tensor.fromNativeResult(ReduceNatives.sumDims(x.nativeHandle(), longs, keepdim, mean, NativeResults.buffer()));
    }

    /** x's shape with the reduced dims (all for none) set to 1: where a reduction's keepdim output lives. */
    private static long[] keptShape(long[] shape, int[] dims) {
        long[] kept = shape.clone();
        if (dims.length == 0) {
            java.util.Arrays.fill(kept, 1);
        }
        for (int d : dims) {
            kept[ShapeOps.wrap("sum", d, shape.length, shape)] = 1;
        }
        return kept;
    }

    /** g (a reduction's gradient, of its output's shape) stretched back to shape. */
    private static Tensor expand(Tensor g, long[] kept, long[] shape, DType dtype, Device device) {
        Tensor zeros = Tensor.full(0, dtype, device, shape);
        return BroadcastOps.add(zeros, g.reshape(kept));
    }

    static Tensor sum(Tensor x, int[] dims, boolean keepdim, boolean mean) {
        Tensor out = sumRaw(x, dims, keepdim, mean);
        long[] shape = x.shape();
        long[] kept = keptShape(shape, dims);
        long count = x.numel() / Math.max(1, out.numel());
        return new Node(mean ? "MeanBackward" : "SumBackward", x) {
            @Override
            protected Tensor[] backward(Tensor g) {
                Tensor e = expand(g, kept, shape, x.dtype(), x.device());
                return new Tensor[] {mean ? UnaryOps.raw(e, UnaryNatives.DIV_SCALAR, count) : e};
            }
        }.attach(out);
    }

    static Tensor[] max(Tensor x, int dim, boolean keepdim) {
        long[] results = NativeResults.buffer();
        ReduceNatives.maxDim(x.nativeHandle(), dim, keepdim, results);
        Tensor values = Tensor.fromNativeResult(results, 0);
        Tensor indices = Tensor.fromNativeResult(results, 1);
        long[] shape = x.shape();
        int d = ShapeOps.wrap("max", dim, shape.length, shape);
        long[] kept = shape.length == 0 ? shape : keptShape(shape, new int[] {d});
        new Node("MaxBackward", x) {
            @Override
            protected Tensor[] backward(Tensor g) { // all to the first maximum, as PyTorch's max(dim)
                if (shape.length == 0) {
                    return new Tensor[] {g};
                }
                Tensor idx = indices.reshape(kept);
                return new Tensor[] {Tensor.fromNativeResult(ShapeNatives.gatherBackward(g.reshape(kept).nativeHandle(),
                        shape, d, idx.nativeHandle(), NativeResults.buffer()))};
            }
        }.attach(values);
        return new Tensor[] {values, indices};
    }

    static Tensor amax(Tensor x, int dim, boolean keepdim) {
        Tensor[] vi = max(x.detach(), dim, keepdim);
        Tensor values = vi[0];
        vi[1].close();
        long[] shape = x.shape();
        int d = ShapeOps.wrap("amax", dim, shape.length, shape);
        long[] kept = shape.length == 0 ? shape : keptShape(shape, new int[] {d});
        return new Node("AmaxBackward", x) {
            @Override
            protected Tensor[] backward(Tensor g) { // spread evenly over the tied maxima, as PyTorch's amax
                Tensor ties = BroadcastOps.compare(x, values.reshape(kept), org.ddp4j.internal.BroadcastNatives.EQ);
                Tensor mask = BroadcastOps.where(ties, Tensor.full(1, DType.FLOAT32, x.device()),
                        Tensor.full(0, DType.FLOAT32, x.device()));
                Tensor count = sumRaw(mask, new int[] {d}, true, false);
                return new Tensor[] {BroadcastOps.mul(mask, BroadcastOps.div(g.reshape(kept), count))};
            }
        }.attach(values);
    }

    static Tensor softmax(Tensor x, int dim, boolean log) {
        Tensor y = Tensor.fromNativeResult(ReduceNatives.softmax(x.nativeHandle(), dim, log, NativeResults.buffer()));
        return new Node(log ? "LogSoftmaxBackward" : "SoftmaxBackward", x) {
            @Override
            protected Tensor[] backward(Tensor g) {
                return new Tensor[] {Tensor.fromNativeResult(ReduceNatives.softmaxBackward(g.nativeHandle(),
                        y.nativeHandle(), dim, log, NativeResults.buffer()))};
            }
        }.attach(y);
    }
}
