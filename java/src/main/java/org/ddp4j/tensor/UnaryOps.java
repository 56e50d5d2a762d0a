package org.ddp4j.tensor;

import org.ddp4j.internal.NativeResults;
import org.ddp4j.internal.UnaryNatives;

/** The differentiable element-wise functions behind Tensor's methods, each with its backward node. */
final class UnaryOps {
    private UnaryOps() {}

    static Tensor raw(Tensor x, int op, double scalar) {
        return Tensor.fromNativeResult(UnaryNatives.unary(x.nativeHandle(), op, scalar, NativeResults.buffer()));
    }

    static Tensor exp(Tensor x) {
        Tensor y = raw(x, UnaryNatives.EXP, 0);
        return new Node("ExpBackward", x) {
            @Override
            protected Tensor[] backward(Tensor g) {
                return new Tensor[] {g.mul(y)};
            }
        }.attach(y);
    }

    static Tensor log(Tensor x) {
        Tensor y = raw(x, UnaryNatives.LOG, 0);
        return new Node("LogBackward", x) {
            @Override
            protected Tensor[] backward(Tensor g) {
                return new Tensor[] {g.div(x)};
            }
        }.attach(y);
    }

    static Tensor tanh(Tensor x) {
        Tensor y = raw(x, UnaryNatives.TANH, 0);
        return new Node("TanhBackward", x) {
            @Override
            protected Tensor[] backward(Tensor g) { // g (1 - y²)
                Tensor oneMinusY2 = raw(raw(raw(y, UnaryNatives.POW, 2), UnaryNatives.NEG, 0), UnaryNatives.ADD_SCALAR, 1);
                return new Tensor[] {g.mul(oneMinusY2)};
            }
        }.attach(y);
    }

    static Tensor pow(Tensor x, double exponent) {
        Tensor y = raw(x, UnaryNatives.POW, exponent);
        return new Node("PowBackward", x) {
            @Override
            protected Tensor[] backward(Tensor g) { // g p x^(p-1); p = 0 gives 0, as PyTorch
                if (exponent == 0) {
                    return new Tensor[] {g.zerosLike()};
                }
                Tensor d = raw(raw(x, UnaryNatives.POW, exponent - 1), UnaryNatives.MUL_SCALAR, exponent);
                return new Tensor[] {g.mul(d)};
            }
        }.attach(y);
    }

    static Tensor sqrt(Tensor x) {
        Tensor y = raw(x, UnaryNatives.SQRT, 0);
        return new Node("SqrtBackward", x) {
            @Override
            protected Tensor[] backward(Tensor g) { // g / (2 y)
                return new Tensor[] {g.div(raw(y, UnaryNatives.MUL_SCALAR, 2))};
            }
        }.attach(y);
    }

    static Tensor neg(Tensor x) {
        Tensor y = raw(x, UnaryNatives.NEG, 0);
        return new Node("NegBackward", x) {
            @Override
            protected Tensor[] backward(Tensor g) {
                return new Tensor[] {raw(g, UnaryNatives.NEG, 0)};
            }
        }.attach(y);
    }

    static Tensor addScalar(Tensor x, double s) {
        Tensor y = raw(x, UnaryNatives.ADD_SCALAR, s);
        return new Node("AddScalarBackward", x) {
            @Override
            protected Tensor[] backward(Tensor g) {
                return new Tensor[] {g};
            }
        }.attach(y);
    }

    static Tensor divScalar(Tensor x, double s) {
        Tensor y = raw(x, UnaryNatives.DIV_SCALAR, s);
        return new Node("DivScalarBackward", x) {
            @Override
            protected Tensor[] backward(Tensor g) {
                return new Tensor[] {raw(g, UnaryNatives.DIV_SCALAR, s)};
            }
        }.attach(y);
    }
}
