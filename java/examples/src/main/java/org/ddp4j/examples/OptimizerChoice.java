package org.ddp4j.examples;

import java.util.List;
import org.ddp4j.optim.Adam;
import org.ddp4j.optim.AdamW;
import org.ddp4j.optim.Optimizer;
import org.ddp4j.optim.SGD;
import org.ddp4j.tensor.Tensor;

/** The demos' {@code --optimizer}: which optimizer, and its lr and weight decay when the flags are absent. */
enum OptimizerChoice {
    /** SGD with momentum; lr 0.05 (the demo's tuned value). */
    sgd(0.05, 0),
    /** Adam with PyTorch's defaults (lr 0.001). */
    adam(1e-3, 0),
    /** AdamW with PyTorch's defaults (lr 0.001, weight decay 0.01). */
    adamw(1e-3, 1e-2);

    private final double defaultLr;
    private final double defaultWeightDecay;

    OptimizerChoice(double defaultLr, double defaultWeightDecay) {
        this.defaultLr = defaultLr;
        this.defaultWeightDecay = defaultWeightDecay;
    }

    /**
     * The optimizer over params; a null lr or weightDecay takes this choice's default; momentum
     * is SGD's only.
     */
    Optimizer create(List<Tensor> params, Double lr, double momentum, Double weightDecay) {
        double learningRate = lr != null ? lr : defaultLr;
        double decay = weightDecay != null ? weightDecay : defaultWeightDecay;
        return switch (this) {
            case sgd -> new SGD(params, SGD.Options.defaults().lr(learningRate).momentum(momentum).weightDecay(decay));
            case adam -> new Adam(params, Adam.Options.defaults().lr(learningRate).weightDecay(decay));
            case adamw -> new AdamW(params, AdamW.Options.defaults().lr(learningRate).weightDecay(decay));
        };
    }
}
