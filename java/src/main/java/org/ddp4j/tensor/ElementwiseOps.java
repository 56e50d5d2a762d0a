package org.ddp4j.tensor;

import org.ddp4j.internal.ElementwiseNatives;
import org.ddp4j.internal.NativeResults;
import org.ddp4j.internal.TensorNatives;

/** The differentiable elementwise ops behind Tensor's methods, each with its backward node. */
final class ElementwiseOps {
    private ElementwiseOps() {}

    static Tensor add(Tensor a, Tensor b, float alpha) {
        Tensor out = Tensor.fromNativeResult(ElementwiseNatives.add(a.nativeHandle(), b.nativeHandle(), alpha, NativeResults.buffer()));
        return new Node(alpha == 1f ? "AddBackward" : "SubBackward", a, b) {
            @Override
            protected Tensor[] backward(Tensor g) {
                return new Tensor[] {g, alpha == 1f ? g : g.mul(alpha)};
            }
        }.attach(out);
    }

    static Tensor mul(Tensor a, Tensor b) {
        Tensor out = Tensor.fromNativeResult(ElementwiseNatives.mul(a.nativeHandle(), b.nativeHandle(), NativeResults.buffer()));
        return new Node("MulBackward", a, b) {
            @Override
            protected Tensor[] backward(Tensor g) {
                return new Tensor[] {needsInputGrad(0) ? g.mul(b) : null, needsInputGrad(1) ? g.mul(a) : null};
            }
        }.attach(out);
    }

    static Tensor scale(Tensor a, float s) {
        Tensor out = Tensor.fromNativeResult(ElementwiseNatives.scale(a.nativeHandle(), s, NativeResults.buffer()));
        return new Node("MulScalarBackward", a) {
            @Override
            protected Tensor[] backward(Tensor g) {
                return new Tensor[] {g.mul(s)};
            }
        }.attach(out);
    }

    static Tensor sum(Tensor a) {
        Tensor out = Tensor.fromNativeResult(ElementwiseNatives.sum(a.nativeHandle(), NativeResults.buffer()));
        long[] shape = a.shape();
        return new Node("SumBackward", a) {
            @Override
            protected Tensor[] backward(Tensor g) {
                return new Tensor[] {Tensor.full(g.item(), a.dtype(), a.device(), shape)};
            }
        }.attach(out);
    }

    static Tensor reshape(Tensor a, long[] newShape) {
        Tensor out = Tensor.fromNativeResult(TensorNatives.view(a.nativeHandle(), newShape, NativeResults.buffer()));
        long[] shape = a.shape();
        return new Node("ViewBackward", a) {
            @Override
            protected Tensor[] backward(Tensor g) {
                return new Tensor[] {
                    Tensor.fromNativeResult(TensorNatives.view(g.nativeHandle(), shape, NativeResults.buffer()))};
            }
        }.attach(out);
    }
}
