package org.ddp4j.tensor;

import java.util.Locale;

/**
 * Prints tensors the way PyTorch does: {@code tensor([[0.1000, 0.2000]], requires_grad=True)},
 * {@code tensor([...], device='cuda:0')} for a GPU tensor (whose values are copied to the host), and
 * {@code tensor([1.1016], dtype=torch.bfloat16)} for the 16-bit types (values widened to float32).
 */
final class TensorFormat {
    private static final int MAX_ELEMENTS = 1000;

    private TensorFormat() {}

    static String format(Tensor t) {
        if (t.isClosed()) {
            return "tensor(<closed " + t.describe() + ">)";
        }
        if (t.numel() > MAX_ELEMENTS) {
            return "tensor(<" + t.describe() + ">)";
        }
        StringBuilder out = new StringBuilder("tensor(");
        long[] shape = t.shape();
        if (t.dtype().isFloatingPoint()) { // the 16-bit types print their values widened, as PyTorch
            float[] values = t.toFloatArray();
            append(out, shape, 0, 0, i -> String.format(Locale.ROOT, "%.4f", values[i]), 7);
        } else if (t.dtype() == DType.BOOL) {
            boolean[] values = t.toBooleanArray();
            append(out, shape, 0, 0, i -> values[i] ? "True" : "False", 7);
        } else {
            long[] values = t.toLongArray();
            append(out, shape, 0, 0, i -> Long.toString(values[i]), 7);
        }
        if (t.device().isCuda()) {
            out.append(", device='").append(t.device()).append('\'');
        }
        if (t.dtype() == DType.BFLOAT16 || t.dtype() == DType.FLOAT16) { // PyTorch names the non-default dtypes
            // (bool and int64 it does not: the values say it)
            out.append(", dtype=torch.").append(t.dtype().name().toLowerCase(Locale.ROOT));
        }
        if (t.requiresGrad()) {
            out.append(t.isLeaf() ? ", requires_grad=True" : ", grad_fn=<" + t.gradFn().name() + ">");
        }
        return out.append(')').toString();
    }

    private interface Element {
        String at(int index);
    }

    private static int append(StringBuilder out, long[] shape, int dim, int offset, Element element, int indent) {
        if (dim == shape.length) {
            out.append(element.at(offset));
            return offset + 1;
        }
        out.append('[');
        int next = offset;
        for (long i = 0; i < shape[dim]; i++) {
            if (i > 0) {
                out.append(',');
                if (dim < shape.length - 1) {
                    out.append('\n').append(" ".repeat(indent + dim + 1));
                } else {
                    out.append(' ');
                }
            }
            next = append(out, shape, dim + 1, next, element, indent);
        }
        out.append(']');
        return next;
    }
}
