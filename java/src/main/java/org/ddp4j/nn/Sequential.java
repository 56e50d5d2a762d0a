package org.ddp4j.nn;

import org.ddp4j.tensor.Tensor;

/** Runs child modules in order, naming them 0, 1, 2, ... Mirrors {@code torch.nn.Sequential}. */
public class Sequential extends Module {
    private final Module[] layers;

    public Sequential(Module... layers) {
        this.layers = layers.clone();
        for (int i = 0; i < layers.length; i++) {
            registerModule(Integer.toString(i), layers[i]);
        }
    }

    /**
     * Runs the children in order. A {@link BatchNorm2d} directly followed by a {@link ReLU} (those
     * classes exactly, not subclasses) runs as {@link BatchNorm2d#forwardRelu}: one fused pass with
     * the same values and one activation less. Each intermediate result (neither the input nor the
     * output) is {@linkplain Tensor#release() released} once the next child has read it when that
     * is safe without knowing the child: when it is recomputable (a batch norm's output, read
     * again bit for bit), or when that child is a {@link BatchNorm2d} (exactly), whose backward is
     * its only reader. So a training step keeps what PyTorch's would, less the batch norm outputs.
     */
    @Override
    public Tensor forward(Tensor input) {
        Tensor x = input;
        for (int i = 0; i < layers.length; i++) {
            boolean batchNorm = layers[i].getClass() == BatchNorm2d.class;
            Tensor next;
            if (batchNorm && i + 1 < layers.length && layers[i + 1].getClass() == ReLU.class) {
                next = ((BatchNorm2d) layers[i]).forwardRelu(x, null);
                i++;
            } else {
                next = layers[i].forward(x);
            }
            if (x != input && next != x && (batchNorm || x.isRecomputable())) {
                x.release();
            }
            x = next;
        }
        return x;
    }
}
