package org.ddp4j.tensor;

import java.util.Arrays;
import org.ddp4j.internal.BroadcastNatives;
import org.ddp4j.internal.NativeResults;

/**
 * The differentiable broadcasting ops behind Tensor's methods: add, sub, mul, div with PyTorch
 * broadcasting (the backward sums each gradient back to its input's shape), comparisons, where
 * and masked_fill.
 */
final class BroadcastOps {
    private BroadcastOps() {}

    private static Tensor binaryRaw(Tensor a, Tensor b, int op) {
        return Tensor.fromNativeResult(BroadcastNatives.binary(a.nativeHandle(), b.nativeHandle(), op, NativeResults.buffer()));
    }

    /**
     * g summed over the dimensions broadcasting stretched, so that it has {@code shape}: the
     * leading dimensions shape lacks and those where shape has size 1. g itself when it already
     * has that shape.
     */
    static Tensor sumTo(Tensor g, long[] shape) {
        long[] gs = g.shape();
        if (Arrays.equals(gs, shape)) {
            return g;
        }
        int lead = gs.length - shape.length;
        int[] dims = new int[gs.length];
        int n = 0;
        for (int i = 0; i < gs.length; i++) {
            if (i < lead || (shape[i - lead] == 1 && gs[i] != 1)) {
                dims[n++] = i;
            }
        }
        Tensor summed = ReduceOps.sumRaw(g, Arrays.copyOf(dims, n), true, false);
        return summed.reshape(shape);
    }

    static Tensor add(Tensor a, Tensor b) {
        Tensor out = binaryRaw(a, b, BroadcastNatives.ADD);
        long[] sa = a.shape(), sb = b.shape();
        return new Node("AddBackward", a, b) {
            @Override
            protected Tensor[] backward(Tensor g) {
                return new Tensor[] {needsInputGrad(0) ? sumTo(g, sa) : null, needsInputGrad(1) ? sumTo(g, sb) : null};
            }
        }.attach(out);
    }

    static Tensor sub(Tensor a, Tensor b) {
        Tensor out = binaryRaw(a, b, BroadcastNatives.SUB);
        long[] sa = a.shape(), sb = b.shape();
        return new Node("SubBackward", a, b) {
            @Override
            protected Tensor[] backward(Tensor g) {
                return new Tensor[] {needsInputGrad(0) ? sumTo(g, sa) : null, needsInputGrad(1) ? sumTo(g.neg(), sb) : null};
            }
        }.attach(out);
    }

    static Tensor mul(Tensor a, Tensor b) {
        Tensor out = binaryRaw(a, b, BroadcastNatives.MUL);
        long[] sa = a.shape(), sb = b.shape();
        return new Node("MulBackward", a, b) {
            @Override
            protected Tensor[] backward(Tensor g) {
                return new Tensor[] {
                    needsInputGrad(0) ? sumTo(binaryRaw(g, b, BroadcastNatives.MUL), sa) : null,
                    needsInputGrad(1) ? sumTo(binaryRaw(g, a, BroadcastNatives.MUL), sb) : null};
            }
        }.attach(out);
    }

    static Tensor div(Tensor a, Tensor b) {
        Tensor out = binaryRaw(a, b, BroadcastNatives.DIV);
        long[] sa = a.shape(), sb = b.shape();
        return new Node("DivBackward", a, b) {
            @Override
            protected Tensor[] backward(Tensor g) {
                Tensor ga = needsInputGrad(0) ? sumTo(binaryRaw(g, b, BroadcastNatives.DIV), sa) : null;
                Tensor gb = null;
                if (needsInputGrad(1)) { // -g a / b²
                    Tensor q = binaryRaw(binaryRaw(g, a, BroadcastNatives.MUL), b, BroadcastNatives.DIV);
                    gb = sumTo(binaryRaw(q, b, BroadcastNatives.DIV).neg(), sb);
                }
                return new Tensor[] {ga, gb};
            }
        }.attach(out);
    }

    /** A comparison (BroadcastNatives.EQ..GE): bool, no gradient. */
    static Tensor compare(Tensor a, Tensor b, int op) {
        return binaryRaw(a, b, op);
    }

    static Tensor where(Tensor condition, Tensor a, Tensor b) {
        Tensor out = Tensor.fromNativeResult(BroadcastNatives.where(condition.nativeHandle(), a.nativeHandle(),
                b.nativeHandle(), NativeResults.buffer()));
        long[] sa = a.shape(), sb = b.shape();
        return new Node("WhereBackward", a, b) {
            @Override
            protected Tensor[] backward(Tensor g) {
                return new Tensor[] {
                    needsInputGrad(0) ? sumTo(maskedFillRaw(g, condition.logicalNot(), 0), sa) : null,
                    needsInputGrad(1) ? sumTo(maskedFillRaw(g, condition, 0), sb) : null};
            }
        }.attach(out);
    }

    private static Tensor maskedFillRaw(Tensor x, Tensor mask, double value) {
        // g may have a larger shape than the mask was made for: broadcast the mask by where's rule
        return Tensor.fromNativeResult(BroadcastNatives.maskedFill(x.nativeHandle(), mask.nativeHandle(), value,
                NativeResults.buffer()));
    }

    static Tensor maskedFill(Tensor x, Tensor mask, double value) {
        Tensor out = maskedFillRaw(x, mask, value);
        return new Node("MaskedFillBackward", x) {
            @Override
            protected Tensor[] backward(Tensor g) {
                return new Tensor[] {maskedFillRaw(g, mask, 0)};
            }
        }.attach(out);
    }
}
